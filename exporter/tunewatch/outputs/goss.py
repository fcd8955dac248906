"""`tunewatch export goss`: the selected profile as a gossfile, resolved for one host.

What goss can express natively (goss v0.4 resources, docs/gossfile.md) is exported, one
resource per (check, object), each with `meta: {check, object}` so a goss result maps back
to the tunewatch verdict; everything else is listed as YAML comments with the reason. A
`command` resource is written only with `--allow-command`.

| kind | goss resource | same verdict as tunewatch because |
| --- | --- | --- |
| process_absent | `process: {comm, running: false}` | both read the command name (proc/<pid>/stat comm = proc/<pid>/comm) |
| service_disabled | `service: {enabled: false}` (or a `/dev/null` link when only `masked` is allowed) | `systemctl is-enabled` fails for disabled, masked and unknown units |
| sysctl (runtime) | `kernel-param: {value}` | both read /proc/sys; multi-value sysctls are compared blank-insensitively by a regexp, as tunewatch does |
| sysctl (configured) | `file` with `contents` patterns | the file that wins today (sysctl.d, sysctl.conf, tuned profile or modprobe.d, as tunewatch resolved it) must carry `key = value`; when nothing sets it, the drop-in `tunewatch remediate` writes |
| nfs_mount_options (runtime) | `mount: {opts, vfs-opts, filesystem}` | per-mount flags (noatime...) are mountinfo field 6 = goss `opts`, NFS options are super options = goss `vfs-opts`; options whose default satisfies them (rdirplus, hard) are asserted by the absence of their negation, aliases become `or` matchers |
| nfs_mount_options (fstab) | `file: /etc/fstab` patterns on the mount point's line | the same alias and negation tables, as regular expressions |
| nfs_nconnect | `mount: {vfs-opts: [nconnect=N]}` | |
| bdi_readahead | `file: /sys/class/bdi/<maj:min>/read_ahead_kb` | the device number is this scan's: it changes when the file system is mounted again |
| udev_attr | `file` patterns on the rule that sets it (else the rule remediation writes) | |
| tuned_profile | `file` patterns on active_profile and the `include=` chain | |

Not expressible (comments): NIC driver state (ethtool ioctl; `--allow-command` exports an
`ethtool` command test), IRQ placement (cpulist arithmetic across files, IRQs compared with
each other), boot mechanisms that tunewatch interprets (ifcfg/NetworkManager/.link/udev/
unit scripts), Accelerated Networking (VF names change after a redeploy; goss cannot glob
lower_*), and hypervisor-side facts (.vmx, esxcli output) that are not on the guest.

Which comparisons are meaningful. goss always judges the machine it runs on, now; tunewatch
judges its `--root`. So:
- exported from `/` and run at once on the same host: every exported verdict must agree
  (tests/test_goss.py proves it with real goss, and a sysctl changed inside a network
  namespace fails in both);
- exported from a snapshot and run later on the host it came from: the policy is right,
  the verdicts agree only as far as the host did not change since the snapshot (a remount
  gives a new bdi number, a reboot new IRQ numbers);
- run on another machine against the snapshot's files (`--files-in-root`): only `file`
  resources say anything about the snapshot; they are written with the root prefixed and
  every runtime resource (kernel-param, mount, process, service) is exported with
  `skip: true`, because goss would judge this machine's /proc, mounts and units.
Known differences: goss counts a `static` or `indirect` unit as enabled (`systemctl
is-enabled` exit 0) where tunewatch looks only at wants/requires links; a file that sets a
sysctl twice passes goss if any line is right; goss's mount test statfs()s the mount point
(for `usage`), which tunewatch never does, so it can hang on an unresponsive hard NFS mount;
goss takes the first mountinfo entry of a mount point, tunewatch the last (the visible one)
when two file systems are mounted on one path.
"""  # noqa: E501 - the table above is Markdown: a row is one line

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .. import __version__
from .. import _escape as escape
from ..content.catalog import SelectedCheck
from ..errors import ContentError, FactError, ParseError
from ..facts.sysctl import MODPROBE_DIRS
from ..facts.tuned import profile_file
from ..kinds import PROVIDES
from ..kinds.nfs_mount_options import normalise
from ..remediate import targets
from ..remediate.hostview import HostView
from ..results import ERROR, NOTAPPLICABLE, PASS, WAIVED, ObjectResult

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

# Per-mount flags (mountinfo field 6, show_mnt_opts() in the kernel); everything else a
# file system prints (NFS: vers, proto, hard, rsize...) is a super-block option.
PER_MOUNT_FLAGS = frozenset({"ro", "rw", "noatime", "nodiratime", "relatime", "strictatime", "lazytime",
                             "nosuid", "nodev", "noexec", "nosymfollow", "atime", "diratime"})
RING_LABELS = {"rx": "RX", "rx-mini": "RX Mini", "rx-jumbo": "RX Jumbo", "tx": "TX"}
CHANNEL_LABELS = {"rx": "RX", "tx": "TX", "other": "Other", "combined": "Combined"}
# why goss cannot express a kind: the "none: ..." rows of kinds.PROVIDES
NOT_EXPRESSIBLE = {kind: goss[len("none: "):] for kind, (_, goss) in PROVIDES.items()
                   if goss.startswith("none: ")}
# With --vsphere.config the guest can ask vCenter: --allow-command exports each VMX/ESXi
# check as a command test that runs tunewatch's own vSphere scan of this guest's VM.
HYPERVISOR_KINDS = ("vmx_option", "vmx_cpu_affinity", "esxcli_setting")
VSPHERE_HINT = ("; with --vsphere.config FILE --allow-command it is exported as a `tunewatch scan "
                "--vsphere.config` command test")
NEEDS_COMMAND = "NIC driver state comes from the ethtool ioctl and goss has no ethtool resource " \
                "(--allow-command exports an `ethtool` command test)"
RUNTIME_TYPES = ("kernel-param", "mount", "process", "service", "command")


@dataclass
class Resource:
    type: str
    spec: dict


@dataclass
class Omitted:
    reason: str


@dataclass
class _Export:
    view: HostView
    files_in_root: bool
    allow_command: bool
    vsphere_config: str | None = None
    resources: dict[str, dict] = field(default_factory=dict)
    omitted: list[tuple[str, str, str]] = field(default_factory=list)

    def path(self, rel: str) -> str:
        """Where goss finds `rel`: on the host, or inside the snapshot (links resolved in it)."""
        return self.view.facts.fs.path(rel) if self.files_in_root else "/" + rel.strip("/")


# -- regular expressions (RE2, as goss uses Go's regexp) -----------------------------------


def _alternation(words: Iterable[str]) -> str:
    words = sorted(set(words), key=lambda w: (-len(w), w))
    return words[0] if len(words) == 1 else "(" + "|".join(words) + ")"


def _sysctl_key_regex(key: str) -> str:
    """sysctl.d(5): the same key may be written with `.` or `/` separators."""
    return "[./]".join(re.escape(part) for part in key.split("."))


def _value_regex(value: Any) -> str:
    return r"\s+".join(re.escape(part) for part in str(value).split())


# -- kinds -----------------------------------------------------------------------------


def _process(x: _Export, sel: SelectedCheck, obj: ObjectResult) -> Resource | Omitted | list[Resource]:
    return Resource("process", {"comm": sel.vars["process"], "running": False})


def _service(x: _Export, sel: SelectedCheck, obj: ObjectResult) -> Resource | Omitted | list[Resource]:
    unit, allowed = sel.vars["unit"], set(sel.vars.get("allowed", ["masked", "disabled", "not-installed"]))
    if allowed == {"masked", "disabled", "not-installed"}:
        return Resource("service", {"name": unit, "enabled": False})
    if allowed == {"masked"}:
        return Resource("file", {"path": x.path(f"etc/systemd/system/{unit}"), "exists": True,
                                 "filetype": "symlink", "linked-to": "/dev/null"})
    return Omitted(f"allows only {', '.join(sorted(allowed))}: goss tells enabled from not enabled, no more")


def _sysctl(x: _Export, sel: SelectedCheck, obj: ObjectResult) -> Resource | Omitted | list[Resource]:
    key, expected = obj.object, sel.vars["settings"][obj.object]
    if sel.vars["source"] == "runtime":
        spec_value = str(expected) if len(str(expected).split()) == 1 else \
            {"match-regexp": rf"^{_value_regex(expected)}$"}
        return Resource("kernel-param", {"name": key, "value": spec_value})
    try:
        found = x.view.facts.sysctl_configured.get(key)
    except (FactError, ParseError) as e:
        return Omitted(f"sysctl configuration unreadable: {e}")
    value = _value_regex(expected)
    source = found.source if found else targets.SYSCTL_DROPIN
    if source.startswith("tuned "):  # "tuned <name> (<file>)": an INI [sysctl] section
        rel = source[source.index("(") + 1:-1]
        pattern = rf"/^\s*{_sysctl_key_regex(key)}\s*=\s*{value}\s*$/"
    else:
        rel = source.rsplit(":", 1)[0] if found else source
        if rel.startswith(MODPROBE_DIRS):
            module_param = next((mp for mp, k in sel.vars.get("module_params", {}).items() if k == key), key)
            module, param = module_param.split(".", 1)
            pattern = rf"/^\s*options\s+{re.escape(module)}\s+(.*\s)?{re.escape(param)}={value}(\s|$)/"
        else:
            pattern = rf"/^\s*-?\s*{_sysctl_key_regex(key)}\s*=\s*{value}\s*$/"
    return Resource("file", {"path": x.path(rel), "exists": True, "contents": [pattern]})


def _spellings(option: str, v: dict) -> list[str]:
    """Every way to write `option` that the check's alias tables read as the same thing."""
    key, _, value = option.partition("=")
    want = normalise([(key, value if "=" in option else None)], {**v, "defaults": {}})
    keys = [key] + [k for k, canon in v.get("key_aliases", {}).items() if canon == key]
    values = [value] + [a for a, canon in v.get("value_aliases", {}).get(key, {}).items() if canon == value]
    candidates = [option] + [f for f, canon in v.get("flag_aliases", {}).items() if canon == option]
    if "=" in option:
        candidates += [f"{k}={val}" for k in keys for val in values]
    return sorted({c for c in candidates
                   if normalise([tuple(c.split("=", 1)) if "=" in c else (c, None)], {**v, "defaults": {}}) == want})


def _option_tests(v: dict, wanted: list[str]) -> list[tuple[str, bool, list[str]]]:
    """(option, must_be_present, spellings): a wanted flag whose default satisfies it (rdirplus,
    hard) is asserted by the absence of each negation (nordirplus, soft)."""
    tests = []
    for option in wanted:
        if "=" not in option and option in v.get("defaults", {}):
            negations = [n for n, canon in v.get("negations", {}).items() if canon == option]
            tests += [(n, False, [n]) for n in negations]
        else:
            tests.append((option, True, _spellings(option, v)))
    return tests


def _mount(x: _Export, sel: SelectedCheck, obj: ObjectResult) -> Resource | Omitted | list[Resource]:
    v = sel.vars
    mount = next((m for m in reversed(x.view.facts.mountinfo) if m.mount_point == obj.object), None)
    if v["source"] == "fstab":
        return _fstab(x, v, obj.object)
    lists: dict[str, list] = {"opts": [], "vfs-opts": []}
    for option, present, spellings in _option_tests(v, list(v["options"])):
        where = "opts" if option.split("=")[0] in PER_MOUNT_FLAGS else "vfs-opts"
        one = spellings[0] if len(spellings) == 1 else {"or": spellings}
        lists[where].append({"contain-element": one} if present else {"not": {"contain-element": one}})
    spec: dict = {"mountpoint": obj.object, "exists": True}
    for name, tests in lists.items():
        if tests:
            spec[name] = tests[0] if len(tests) == 1 else {"and": tests}
    if mount is not None:
        spec["filesystem"] = mount.fstype
    return Resource("mount", spec)


def _fstab(x: _Export, v: dict, mount_point: str) -> Resource:
    line = rf"^\s*\S+\s+{re.escape(mount_point.rstrip('/') or '/')}/?\s+\S+\s+(\S*,)?"
    patterns = []
    for _option, present, spellings in _option_tests(v, list(v["options"]) + list(v.get("fstab_only_options", []))):
        regex = f"/{line}{_alternation(re.escape(s) for s in spellings)}(,\\S*)?(\\s|$)/"
        patterns.append(regex if present else "!" + regex)
    return Resource("file", {"path": x.path("etc/fstab"), "exists": True, "contents": patterns})


def _nconnect(x: _Export, sel: SelectedCheck, obj: ObjectResult) -> Resource | Omitted | list[Resource]:
    return Resource("mount", {"mountpoint": obj.object, "exists": True,
                              "vfs-opts": [f"nconnect={sel.vars['nconnect']}"]})


def _readahead(x: _Export, sel: SelectedCheck, obj: ObjectResult) -> Resource | Omitted | list[Resource]:
    mount = next((m for m in reversed(x.view.facts.mountinfo) if m.mount_point == obj.object), None)
    if mount is None:
        return Omitted("mount not found in mountinfo")
    return Resource("file", {"path": x.path(f"sys/class/bdi/{mount.major}:{mount.minor}/read_ahead_kb"),
                             "exists": True, "contents": [f"/^{sel.vars['read_ahead_kb']}$/"]})


def _udev(x: _Export, sel: SelectedCheck, obj: ObjectResult) -> Resource | Omitted | list[Resource]:
    sub, attr, value = (re.escape(str(sel.vars[k])) for k in ("subsystem", "attribute", "value"))
    rel = obj.actual.rsplit(":", 1)[0] if obj.status == PASS else \
        targets.udev_rule(sel.vars["subsystem"], sel.vars["attribute"])
    match, assign = rf'SUBSYSTEM=="{sub}"', rf'ATTR\{{{attr}\}}:?="{value}"'
    return Resource("file", {"path": x.path(rel), "exists": True,
                             "contents": [f"/^[^#]*({match}.*{assign}|{assign}.*{match})/"]})


def _tuned(x: _Export, sel: SelectedCheck, obj: ObjectResult) -> Resource | Omitted | list[Resource]:
    wanted = sel.vars["profile"]
    active = x.view.facts.tuned
    chain = list(active.chain) if active and wanted in active.chain else [wanted]
    chain = chain[:chain.index(wanted) + 1]
    resources = [Resource("file", {"path": x.path("etc/tuned/active_profile"), "exists": True,
                                   "contents": [rf"/^\s*{re.escape(chain[0])}(\s|$)/"]})]
    for outer, inner in zip(chain, chain[1:]):
        rel = profile_file(x.view.facts.fs, outer, x.view.facts.defaults.layouts.get("tuned")) or \
            f"etc/tuned/{outer}/tuned.conf"
        resources.append(Resource("file", {"path": x.path(rel), "exists": True,
                                           "contents": [rf"/^\s*include\s*=\s*(.*,)?\s*{re.escape(inner)}\s*(,.*)?$/"]}))  # noqa: E501 - one regex
    return resources


def _ethtool_command(x: _Export, sel: SelectedCheck, obj: ObjectResult) -> Resource | Omitted | list[Resource]:
    if not x.allow_command:
        return Omitted(NEEDS_COMMAND)
    iface = obj.object
    if sel.check.kind == "nic_channels":
        kind = next((s.name.split(".")[1] for s in obj.settings if s.name.startswith("channels.")
                     and s.name != "channels.limit"), "combined")
        limit = int(obj.expected.lstrip("<= ").strip())
        section, expected = "channels", {kind: f"({'|'.join(str(n) for n in range(limit + 1))})"}
    else:
        section = sel.vars["section"]
        expected = {k: ("on" if v else "off") if isinstance(v, bool) else re.escape(str(v))
                    for k, v in sel.vars["expected"].items()}
    option = {"channels": "-l", "rings": "-g", "coalesce": "-c", "features": "-k"}[section]
    exec_ = f"ethtool {option} {escape.sh(iface)}"  # goss runs it with sh -c
    labels = {"channels": CHANNEL_LABELS, "rings": RING_LABELS}.get(section)
    if labels:  # two blocks, "Pre-set maximums" then "Current hardware settings": judge the second
        exec_ += " | sed -n '/^Current hardware settings/,$p'"
    patterns = [rf"/^{re.escape(labels[k]) if labels else re.escape(k)}:\s+{want}(\s|$)/"
                for k, want in expected.items()]
    return Resource("command", {"exec": exec_, "exit-status": 0, "stdout": patterns, "timeout": 10000})


def _vsphere_command(x: _Export, sel: SelectedCheck, obj: ObjectResult) -> Resource | Omitted | list[Resource]:
    """The guest asks vCenter through tunewatch itself (the .vmx and esxcli are not here)."""
    if not (x.allow_command and x.vsphere_config):
        return Omitted(NOT_EXPRESSIBLE[sel.check.kind] + VSPHERE_HINT)
    profile = x.view.result.profile
    exec_ = (f"tunewatch scan --vsphere.config {_shell_word(x.vsphere_config)} --profile {_shell_word(profile)} "
             f"--rule {sel.check.id} --format json")
    return Resource("command", {"exec": exec_, "exit-status": 0, "timeout": 60000})


def _shell_word(text: str) -> str:
    return escape.sh(text)


TEMPLATES = {"process_absent": _process, "service_disabled": _service, "sysctl": _sysctl,
             "nfs_mount_options": _mount, "nfs_nconnect": _nconnect, "bdi_readahead": _readahead,
             "udev_attr": _udev, "tuned_profile": _tuned, "nic_channels": _ethtool_command,
             "nic_ethtool": _ethtool_command}


# -- assembling the gossfile ---------------------------------------------------------------


def _add(x: _Export, check: str, title: str, obj: ObjectResult, made: Resource | list[Resource]) -> None:
    made = made if isinstance(made, list) else [made]
    why = next((w for w in (escape.goss_unwritable(res.spec) for res in made) if w), None)
    if why:
        x.omitted.append((check, obj.object, why))
        return
    for n, res in enumerate(made):
        spec = dict(res.spec)
        if x.files_in_root and res.type in RUNTIME_TYPES:
            spec["skip"] = True  # goss would judge this machine, not the snapshot
        if obj.status == WAIVED:
            spec["skip"] = True
        shown = escape.utf8(obj.object)
        spec["title"] = f"{title} ({shown})" + (" - waived in tunewatch" if obj.status == WAIVED else "")
        spec["meta"] = {"check": check, "object": shown}
        key = f"{check} {shown}" + (f" #{n + 1}" if n else "")
        x.resources.setdefault(res.type, {})[key] = spec


def build(view: HostView, files_in_root: bool = False, allow_command: bool = False,
          vsphere_config: str | None = None) -> _Export:
    x = _Export(view, files_in_root, allow_command, vsphere_config)
    for result in view.result.results:
        sel = view.selected(result.check)
        template = _vsphere_command if result.kind in HYPERVISOR_KINDS and vsphere_config else \
            TEMPLATES.get(result.kind)
        if result.status == NOTAPPLICABLE:
            x.omitted.append((result.check, "-", "not applicable on this host"))
            continue
        if template is None:
            hint = VSPHERE_HINT if result.kind in HYPERVISOR_KINDS else ""
            x.omitted.append((result.check, "-", NOT_EXPRESSIBLE.get(result.kind, "no goss resource expresses it")
                              + hint))
            continue
        for obj in result.objects:
            if obj.status in (ERROR, NOTAPPLICABLE):
                x.omitted.append((result.check, obj.object, f"tunewatch says {obj.status}: {obj.message}"))
                continue
            try:
                made = template(x, sel, obj)
            except (FactError, ParseError) as e:
                made = Omitted(f"a fact is unreadable: {e}")
            if isinstance(made, Omitted):
                x.omitted.append((result.check, obj.object, made.reason))
            else:
                _add(x, result.check, result.title, obj, made)
    return x


class NothingToExport(ContentError):
    """No selected check can be expressed as a goss test on this host: goss rejects an
    empty gossfile (exit 78), so none is written."""


def render(view: HostView, files_in_root: bool = False, allow_command: bool = False,
           vsphere_config: str | None = None) -> str:
    x = build(view, files_in_root, allow_command, vsphere_config)
    if not x.resources:
        reasons = "; ".join(dict.fromkeys(f"{check}: {reason}" for check, _obj, reason in x.omitted))
        raise NothingToExport(f"profile {view.result.profile}", "nothing in it can be expressed as a goss test "
                                                                f"on this host, so no gossfile is written ({reasons})")
    skipped = [key for tests in x.resources.values() for key, spec in tests.items() if spec.get("skip")]
    if len(skipped) == sum(len(tests) for tests in x.resources.values()):
        # goss passes a file whose every test is skipped: that would read as compliant
        why = "runtime tests judge the machine goss runs on" if files_in_root else "waived in tunewatch"
        raise NothingToExport(f"profile {view.result.profile}",
                              f"every test goss could run here would be skipped ({why}: {', '.join(skipped)}), so "
                              "goss would pass without checking anything; no gossfile is written")
    r = view.result
    host = r.host.hostname if r.host else "unknown host"
    head = [f"gossfile exported by tunewatch {__version__} for {host}: profile {r.profile}, root {r.root}",
            "run it on that host: goss -g THIS_FILE validate   (each test's meta names the tunewatch check)",
            "tunewatch remains the reference; the comments at the end list what goss cannot express."]
    if files_in_root:
        head.append(f"file paths point into {r.root}; runtime tests are skipped (goss would judge this machine)")
    if "mount" in x.resources:
        head.append("note: goss statfs()s every mount point it tests, which hangs on an unresponsive hard NFS mount")
    body = escape.goss_yaml(x.resources)
    tail = ["", "not exported:"] + ([f"  {check} {obj}: {reason}" for check, obj, reason in x.omitted]
                                    or ["  nothing: every selected check is exported"])
    return "".join(f"# {escape.comment(line)}\n" for line in head) + body + \
        "".join(f"#{(' ' + escape.comment(line)) if line else ''}\n" for line in tail)
