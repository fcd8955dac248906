"""The `--vsphere.config` / `--vsphere.vm` / `--vsphere.tag` options of scan, serve and collect.

Without --vsphere.config nothing here imports pyVmomi or talks to anyone.
- scan|serve --vsphere.config F: guest mode, the VMX/ESXi facts of this guest's own VM
  (found by BIOS UUID) join the guest's results.
- scan --vsphere.config F --vsphere.vm NAME and/or --vsphere.tag CAT/TAG: that one VM
  judged from vSphere alone (its VMX/ESXi checks); a selection of no VM or several, or a
  tag that exists nowhere, is a usage error (exit 1).
- serve --vsphere.config F --vsphere.vm GLOB [...] --vsphere.tag CAT/TAG [...]: central
  mode (central.py); a VM is selected when it matches any GLOB or carries any TAG.
- collect --vsphere.config F: the guest's VM's facts written under vmware/ of the snapshot.
"""

from __future__ import annotations

import contextlib
import sys

from ..errors import ContentError, FactError

TYPE_CHECKING = False  # typing costs ~3 ms of start-up: docs/architecture.md#start-up-cost
if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace
    from typing import Any, Callable

    from ..content.catalog import Content, ResolvedProfile
    from ..content.waivers import Waiver
    from .config import VsphereConfig


def add_arguments(p: ArgumentParser, command: str) -> None:
    p.add_argument("--vsphere.config", dest="vsphere_config", metavar="FILE",
                   help="read the VMX and ESXi facts from vCenter/ESXi: YAML with url, username, password_file, "
                        "ca_file, insecure_skip_verify, timeout (docs/vsphere.md)")
    tag_help = ("this vSphere tag (TAG in any category, or CATEGORY/TAG; read over the vSphere Automation REST "
                "API; repeatable)")
    if command == "scan":
        p.add_argument("--vsphere.vm", dest="vsphere_vm", metavar="GLOB",
                       help="judge this VM from vSphere facts alone; a glob (or --vsphere.tag) that selects "
                            "several VMs gives one report with a section per VM (text, json or junit)")
        p.add_argument("--vsphere.tag", dest="vsphere_tag", action="append", default=[], metavar="CATEGORY/TAG",
                       help=f"judge every VM carrying {tag_help}; with --vsphere.vm the VMs either selects")
    elif command == "serve":
        p.add_argument("--vsphere.vm", dest="vsphere_vm", action="append", default=[], metavar="GLOB",
                       help="central mode: export the VMX/ESXi checks of every VM whose name (or, for a GLOB with "
                            "a /, inventory path such as /DC0/vm/appliances/*) matches (repeatable)")
        p.add_argument("--vsphere.tag", dest="vsphere_tag", action="append", default=[], metavar="CATEGORY/TAG",
                       help=f"central mode: also export every VM carrying {tag_help}; a VM is selected when it "
                            "matches any --vsphere.vm GLOB or carries any --vsphere.tag")


def _config(args):
    path = getattr(args, "vsphere_config", None)
    for flag, dest in (("--vsphere.vm", "vsphere_vm"), ("--vsphere.tag", "vsphere_tag")):
        if getattr(args, dest, None) and not path:
            raise ContentError(flag, "needs --vsphere.config FILE")
    tags = getattr(args, "vsphere_tag", None) or []
    if tags:  # a plain scan imports nothing of vSphere (http.client, ssl: start-up time)
        from .tags import check_selector
        for text in tags:
            problem = check_selector(text)
            if problem:
                raise ContentError("--vsphere.tag", problem)
    if not path:
        return None
    from .config import require_config
    return require_config(path)


def fetch_named(cfg: VsphereConfig, name: str | None, tags: list[str] | None = None) -> Any:
    """(VM name, files) of the one VM `name` (a glob) or `tags` select; ContentError (usage)
    for none or several, or for a tag that exists nowhere."""
    from .client import Session, run_with_deadline
    from .source import error_files, vm_files
    from .tags import UnknownTag, select_vms
    tags = list(tags or [])
    flag = "--vsphere.vm" if not tags else "--vsphere.tag" if name is None else "--vsphere.vm/--vsphere.tag"
    what = " or ".join([repr(name)] * (name is not None) + [f"tag {t!r}" for t in tags])

    def run():
        session = Session(cfg).connect()
        try:
            try:
                chosen = select_vms(cfg, session.list_vms(), [name] if name is not None else [], tags)
            except UnknownTag as e:
                raise ContentError("--vsphere.tag", str(e)) from None
            if len(chosen) != 1:
                listed = ", ".join(sorted(vm[1] for vm in chosen)[:10])
                raise ContentError(flag, f"{what} {'matches' if not tags else 'selects'} {len(chosen)} VMs in "
                                         f"{cfg.endpoint}" + (f": {listed}" if listed else "")
                                   + ("; name exactly one" if not tags else "; select exactly one"))
            return chosen[0][1], vm_files(session, session.read_vm(chosen[0][0]))
        finally:
            session.close()
    shown = name if name is not None else tags[0]
    try:
        return run_with_deadline(run, cfg.timeout, f"vSphere {cfg.endpoint}")
    except FactError as e:
        return shown, error_files(str(e), shown)


def scan_many(args, content, profile, waivers):
    """The FleetResult of `scan --vsphere.vm GLOB` / `--vsphere.tag` when they select several
    VMs; None otherwise (no vSphere selection, one VM, or none: scan_setup says which)."""
    cfg = _config(args)
    name, tags = getattr(args, "vsphere_vm", None), list(getattr(args, "vsphere_tag", None) or [])
    if cfg is None or (name is None and not tags):
        return None
    from . import central
    from .client import Session, run_with_deadline
    from .tags import select_vms

    def count() -> int:
        session = Session(cfg).connect()
        try:
            return len(select_vms(cfg, session.list_vms(), [name] if name is not None else [], tags))
        finally:
            session.close()
    try:
        if run_with_deadline(count, cfg.timeout, f"vSphere {cfg.endpoint}") <= 1:
            return None
    except (FactError, ContentError):
        return None  # the one-VM path reads again and reports it
    from .._progress import Progress
    progress = Progress()  # a status line on a terminal's stderr; nothing in a pipe or a log
    try:
        return central.scan_fleet(cfg, [name] if name is not None else [], content, profile, waivers, tags, progress)
    finally:
        progress.done()


@contextlib.contextmanager
def scan_setup(args, profile):
    """(root, profile) for `scan`: unchanged without --vsphere.config. (cli/main.py comes
    here only when a --vsphere.* option is given: a plain scan imports nothing of vsphere/.)"""
    cfg = _config(args)
    if cfg is None:
        yield args.root, profile
        return
    import shutil
    import tempfile

    from ..facts import vmware as vmware_facts
    if getattr(args, "vsphere_vm", None) or getattr(args, "vsphere_tag", None):
        from .central import StaticSource, hypervisor_only
        from .source import identity_files
        name, files = fetch_named(cfg, args.vsphere_vm, list(getattr(args, "vsphere_tag", None) or []))
        root = tempfile.mkdtemp(prefix="tunewatch-vsphere-")
        vmware_facts.use_source(StaticSource(files, identity_files(name)))
        try:
            yield root, hypervisor_only(profile)
        finally:
            vmware_facts.use_source(None)
            shutil.rmtree(root, ignore_errors=True)
        return
    from .source import VsphereSource
    vmware_facts.use_source(VsphereSource(cfg))
    try:
        yield args.root, profile
    finally:
        vmware_facts.use_source(None)


def serve_setup(args: Namespace, content: Content, profile: ResolvedProfile, waivers: list[Waiver],
                scan: Callable[[], Any]) -> tuple[Callable[[], Any], Callable[..., Any] | None]:
    """(scan, prepare) for `serve`: prepare None means the default rendering."""
    cfg = _config(args)
    if cfg is None:
        return scan, None
    if args.vsphere_vm or args.vsphere_tag:
        from . import central
        return (lambda: central.scan_fleet(cfg, list(args.vsphere_vm), content, profile, waivers,
                                           list(args.vsphere_tag)),
                central.render_output)
    from ..facts import vmware as vmware_facts
    from .source import VsphereSource
    vmware_facts.use_source(VsphereSource(cfg))  # inherited by each scan's child
    return scan, None


def collect_files(args: Namespace, root: str) -> tuple[dict | None, bool]:
    """(the vmware/ files for `collect --vsphere.config` or None without it, all of them read)."""
    cfg = _config(args)
    if cfg is None:
        return None, True
    from ..host.fs import FS
    from .source import Unreadable, VsphereSource
    files = VsphereSource(cfg).overlay(FS(root)).files
    bad = sorted({v.message for v in files.values() if isinstance(v, Unreadable)})
    for message in bad:
        print(f"tunewatch collect: vSphere facts not written: {message}", file=sys.stderr)
    return {rel: text for rel, text in files.items() if isinstance(text, str)}, not bad
