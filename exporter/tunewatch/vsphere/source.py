"""Where a scan's VMX/ESXi facts come from when `--vsphere.config` is given.

`VsphereSource(cfg)` (guest mode) finds the VM whose BIOS UUID is the guest's
`sys/class/dmi/id/product_uuid`; `VsphereSource(cfg, vm_name=NAME)` (central mode, one VM
judged from vSphere alone) takes the VM by name. Either way the facts are served as files
under `vmware/` of the scanned root (`OverlayFS`), read lazily: a scan whose profile has
no VMX/ESXi check never talks to vCenter.

BIOS UUID byte order: SMBIOS 2.6 and later encode the first three fields of the system
UUID little-endian (SMBIOS spec DSP0134 §7.2.1), and Linux prints product_uuid that way
for SMBIOS >= 2.6 (drivers/firmware/dmi_scan.c, dmi_save_uuid(): `%pUl` from 2.6, `%pUb`
before). vSphere's `config.uuid` is the big-endian form, so a guest whose virtual BIOS
reports SMBIOS >= 2.6 shows it with those fields byte-swapped. Both forms are matched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Union

from ..errors import FactError
from .client import HostFacts, Session, VmFacts, match_names, run_with_deadline
from .config import VsphereConfig
from .render import file_name, render_files

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..host.fs import FS

_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


@dataclass(frozen=True)
class Unreadable:
    """A file whose fact could not be read: reading it raises FactError(message)."""
    message: str


Files = dict  # rel path -> str | Unreadable
FileValue = Union[str, Unreadable]


def uuid_forms(text: str) -> set[str]:
    """The UUID as given and with its first three fields byte-swapped (SMBIOS >= 2.6)."""
    u = text.strip().lower()
    if not _UUID.match(u):
        return set()
    a, b, c, rest = u[:8], u[9:13], u[14:18], u[18:]

    def swap(h: str) -> str:
        return "".join(reversed([h[i:i + 2] for i in range(0, len(h), 2)]))
    return {u, f"{swap(a)}-{swap(b)}-{swap(c)}{rest}"}


def vm_files(session: Session, vm: VmFacts, hosts: dict | None = None) -> Files:
    """The VM's .vmx and its host's esxcli files; a host that cannot be read gives
    Unreadable esxcli files (the VMX checks still run). `hosts`: host moId -> HostFacts or
    the FactError of reading it, filled here for a host it lacks."""
    host: HostFacts | None = None
    files: Files = {}
    if vm.host_ref is not None:
        hosts = {} if hosts is None else hosts
        key = vm.host_ref._moId
        if key not in hosts:
            try:
                hosts[key] = session.read_host(vm.host_ref)
            except FactError as e:
                hosts[key] = e
        found = hosts[key]
        if isinstance(found, FactError):
            files = {"vmware/esxcli/advanced.txt": Unreadable(str(found)),
                     "vmware/esxcli/cpu-global.txt": Unreadable(str(found))}
        else:
            host = found
    return {**render_files(vm, host), **files}


def error_files(message: str, vm_name: str = "vsphere") -> Files:
    """What a scan sees when vCenter cannot be read: VMX and ESXi facts exist (the checks
    apply) and reading them says why they are unknown, so the checks are `error`."""
    return {f"vmware/{file_name(vm_name)}": Unreadable(message),
            "vmware/esxcli/advanced.txt": Unreadable(message),
            "vmware/esxcli/cpu-global.txt": Unreadable(message)}


class VsphereSource:
    def __init__(self, cfg: VsphereConfig, vm_name: str | None = None):
        self.cfg, self.vm_name = cfg, vm_name

    def fetch(self, guest_uuid: Callable[[], str | None]) -> Files:
        """The files for this scan; never raises: a failure becomes Unreadable files."""
        try:
            return run_with_deadline(lambda: self._fetch(guest_uuid), self.cfg.timeout,
                                     f"vSphere {self.cfg.endpoint}")
        except FactError as e:
            return error_files(str(e), self.vm_name or "vsphere")

    def _fetch(self, guest_uuid: Callable[[], str | None]) -> Files:
        session = Session(self.cfg).connect()
        try:
            vms = session.list_vms()
            if self.vm_name is not None:
                chosen = match_names(vms, [self.vm_name])
                what = f"named {self.vm_name!r}"
            else:
                raw = guest_uuid()
                forms = uuid_forms(raw or "")
                if not forms:
                    raise FactError(f"cannot find this guest's VM: sys/class/dmi/id/product_uuid is "
                                    f"{'missing' if raw is None else 'not a UUID: ' + repr(raw[:40])}")
                chosen = [vm for vm in vms if vm[2] in forms]
                what = f"with BIOS UUID {' or '.join(sorted(forms))}"
            if len(chosen) != 1:
                names = ", ".join(sorted(vm[1] for vm in chosen)[:5])
                raise FactError(f"vSphere {self.cfg.endpoint}: {len(chosen)} VMs {what}"
                                + (f" ({names})" if names else ""))
            return vm_files(session, session.read_vm(chosen[0][0]))
        finally:
            session.close()

    def overlay(self, fs: FS, identity: Files | None = None) -> OverlayFS:
        def load() -> Files:
            return self.fetch(lambda: fs.read_value("sys/class/dmi/id/product_uuid"))
        return OverlayFS(fs, load, identity)


def identity_files(vm_name: str) -> Files:
    """Host identity of a VM judged from vSphere alone: the report's host is the VM."""
    return {"proc/sys/kernel/hostname": vm_name + "\n", "sys/class/dmi/id/sys_vendor": "VMware, Inc.\n",
            "sys/class/dmi/id/product_name": "VMware Virtual Platform\n"}


class OverlayFS:
    """An FS whose `vmware/` directory (and the `identity` files) come from vSphere.

    Every other path goes to the wrapped FS. The snapshot's own vmware/ files are hidden:
    with --vsphere.config the live vSphere answer is the fact.
    """

    PREFIX = "vmware"

    def __init__(self, fs: FS, load: Callable[[], Files], identity: Files | None = None):
        self._fs, self._load, self._identity = fs, load, dict(identity or {})
        self._files: Files | None = None

    def __getattr__(self, name):
        return getattr(self._fs, name)

    def __repr__(self) -> str:
        return f"OverlayFS({self._fs!r})"

    @property
    def files(self) -> Files:
        if self._files is None:
            self._files = self._load()
        return self._files

    def _mine(self, rel: str) -> bool:
        rel = rel.strip("/")
        return rel in self._identity or rel == self.PREFIX or rel.startswith(self.PREFIX + "/")

    def _get(self, rel: str) -> FileValue | None:
        rel = rel.strip("/")
        if rel in self._identity:
            return self._identity[rel]
        return self.files.get(rel)

    def read_text(self, rel: str, max_bytes: int = 0) -> str | None:
        if not self._mine(rel):
            return self._fs.read_text(rel, max_bytes) if max_bytes else self._fs.read_text(rel)
        value = self._get(rel)
        if isinstance(value, Unreadable):
            raise FactError(value.message)
        return value

    def read_bytes(self, rel: str, max_bytes: int = 0) -> bytes | None:
        if not self._mine(rel):
            return self._fs.read_bytes(rel, max_bytes) if max_bytes else self._fs.read_bytes(rel)
        text = self.read_text(rel)
        return None if text is None else text.encode()

    def read_required(self, rel: str, max_bytes: int = 0) -> str:
        text = self.read_text(rel, max_bytes)
        if text is None:
            raise FactError(f"{rel} does not exist under {self._fs.root}")
        return text

    def read_value(self, rel: str) -> str | None:
        text = self.read_text(rel)
        return None if text is None else text.strip()

    def listdir(self, rel: str) -> list[str]:
        if not self._mine(rel):
            return self._fs.listdir(rel)
        prefix = rel.strip("/") + "/"
        return sorted({p[len(prefix):].split("/", 1)[0] for p in self.files if p.startswith(prefix)})

    def glob(self, rel_dir: str, pattern: str = "*") -> list[str]:
        import fnmatch
        if not self._mine(rel_dir):
            return self._fs.glob(rel_dir, pattern)
        rel_dir = rel_dir.strip("/")
        return [f"{rel_dir}/{n}" for n in self.listdir(rel_dir) if fnmatch.fnmatchcase(n, pattern)]

    def exists(self, rel: str) -> bool:
        if not self._mine(rel):
            return self._fs.exists(rel)
        return self._get(rel) is not None or bool(self.listdir(rel))

    resolves = exists

    def is_dir(self, rel: str) -> bool:
        return self._fs.is_dir(rel) if not self._mine(rel) else bool(self.listdir(rel))
