"""Read-only vSphere API access with pyVmomi: one VM's configuration and its ESXi host.

Every call runs under the config's `timeout` for the whole exchange (connect, login and
reads), not per socket read: a vCenter that accepts the connection and then never answers
(or drips bytes) costs at most `timeout`. The call runs in a daemon thread that is left
behind when the time is up; the scan that asked runs in a child process (scan watchdog or
serve's scan child) that exits afterwards, so nothing waits for it.

Errors become FactError with a message that names the endpoint and what to do, never the
user name or the password. Privileges needed: System.Anonymous, System.View and
System.Read on the VMs and hosts (the built-in "Read-only" role), nothing else.
"""

from __future__ import annotations

import fnmatch
import socket
import ssl
import threading
from dataclasses import dataclass, field
from typing import Callable, TypeVar

from ..errors import FactError
from .config import VsphereConfig

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

T = TypeVar("T")
# Host advanced options read from the OptionManager (the esxi-* checks).
HOST_OPTIONS = ("Net.NetNetqRxQueueFeatPairEnable",)
# The VMX `ethernetN` index of a virtual NIC: its unit number on the PCI controller minus 7
# (govmomi object/virtual_device_list.go, VirtualDeviceList.Name(): "ethernet-%d" of
# UnitNumber-7; units 36-45 are SR-IOV NICs, named apart). Without a unit number, ESXi's
# device key 4000 + N; failing both, the position among the NICs.
ETHERNET_FIRST_UNIT, SRIOV_UNITS = 7, range(36, 46)
ETHERNET_KEY_BASE = 4000


@dataclass(frozen=True)
class VmFacts:
    name: str
    uuid: str  # config.uuid, the BIOS UUID the guest sees as product_uuid
    extra_config: dict[str, str]
    cpu_affinity: tuple[int, ...] | None
    nics: tuple[tuple[int, str], ...]  # (ethernet index, virtualDev), e.g. (1, "vmxnet3")
    host_ref: Any = field(default=None, compare=False, repr=False)  # a pyVmomi HostSystem


@dataclass(frozen=True)
class HostFacts:
    name: str
    options: dict[str, str]  # advanced option key -> value (text)
    ht_available: bool | None
    ht_active: bool | None
    ht_config: bool | None
    power_policy: str | None  # currentPolicy.shortName: static, dynamic, low, custom


def run_with_deadline(fn: Callable[[], T], timeout: float, what: str) -> T:
    """fn() in a daemon thread; FactError when it has not returned after `timeout` s."""
    box: dict[str, object] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            box["error"] = e
    thread = threading.Thread(target=target, name="tunewatch-vsphere", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise FactError(f"{what}: {_no_answer(timeout)}")
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]


def _no_answer(timeout: float) -> str:
    """One text for a timeout, whichever fires first: the socket's own timeout (equal to the
    deadline, per operation) or the deadline of the whole exchange. They race when one
    operation takes the whole budget."""
    return (f"no answer within the timeout of {timeout:g}s (vCenter hanging or unreachable; `timeout` in "
            "--vsphere.config)")


def _ssl_context(cfg: VsphereConfig) -> ssl.SSLContext:
    if cfg.insecure_skip_verify:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    return ssl.create_default_context(cafile=cfg.ca_file)


def _explain(cfg: VsphereConfig, e: BaseException) -> FactError:
    where = f"vSphere {cfg.endpoint}"
    if isinstance(e, FactError):
        return e
    if isinstance(e, ssl.SSLCertVerificationError):
        return FactError(f"{where}: TLS certificate not trusted ({e.verify_message}); give the CA in `ca_file` "
                         f"of {cfg.path} (insecure_skip_verify only for tests)")
    if isinstance(e, ssl.SSLError):
        return FactError(f"{where}: TLS error: {e.reason or e}")
    if isinstance(e, ConnectionRefusedError):
        return FactError(f"{where}: connection refused (vCenter down or wrong port)")
    if isinstance(e, (socket.timeout, TimeoutError)):
        return FactError(f"{where}: {_no_answer(cfg.timeout)}")
    if isinstance(e, OSError):
        return FactError(f"{where}: cannot connect: {e.strerror or e}")
    name = type(e).__name__
    if name.endswith("InvalidLogin"):
        return FactError(f"{where}: login refused: wrong user name or password (from {cfg.path} or the "
                         "environment)")
    if name.endswith("NoPermission"):
        return FactError(f"{where}: permission denied; the account needs the Read-only role")
    msg = getattr(e, "msg", None) or str(e)
    return FactError(f"{where}: {name}: {msg}"[:500])


class Session:
    """A logged-in read-only session. Use `call(fn)` for every exchange."""

    def __init__(self, cfg: VsphereConfig):
        self.cfg = cfg
        self._si: Any = None  # pyVmomi ServiceInstance once logged in
        self._content = None  # the ServiceContent, kept for the session

    def call(self, fn: Callable[[], T], what: str = "") -> T:
        def guarded() -> T:
            try:
                return fn()
            except Exception as e:  # noqa: BLE001 - every failure gets a clear message
                raise _explain(self.cfg, e) from None
        return run_with_deadline(guarded, self.cfg.timeout, f"vSphere {self.cfg.endpoint}{what}")

    def connect(self) -> Session:
        from pyVim.connect import SmartConnect  # pyVmomi only when --vsphere.config is given
        cfg = self.cfg

        def login():
            return SmartConnect(host=cfg.host, port=cfg.port, user=cfg.username, pwd=cfg.password,
                                sslContext=_ssl_context(cfg), httpConnectionTimeout=cfg.timeout,
                                connectionPoolTimeout=-1)
        self._si = self.call(login)
        return self

    def close(self) -> None:
        if self._si is not None:
            from pyVim.connect import Disconnect
            try:
                run_with_deadline(lambda: Disconnect(self._si), min(self.cfg.timeout, 2.0), "logout")
            except Exception:  # noqa: BLE001 - the session times out on the server anyway
                pass
            self._si = None

    # -- reads -------------------------------------------------------------------------
    # Each read is one PropertyCollector retrieval of every object it needs (paged by
    # RetrievePropertiesEx), never one call per VM: a fleet of 1,000 VMs costs a few
    # requests, as `govc object.collect` does.
    PAGE = 500  # objects per RetrievePropertiesEx page: vCenter's own default is 100-1000

    def _service_content(self):
        if self._content is None:  # once per session: SmartConnect already fetched it
            self._content = self._si.RetrieveContent()
        return self._content

    def _collect(self, vimtype: Any, props: list[str], objs: Any = None) -> list[tuple[Any, dict]]:
        from pyVmomi import vmodl
        content = self._service_content()
        pc = content.propertyCollector
        view = None
        if objs is None:
            view = content.viewManager.CreateContainerView(content.rootFolder, [vimtype], True)
            traversal = vmodl.query.PropertyCollector.TraversalSpec(name="view", path="view", skip=False,
                                                                     type=type(view))
            obj_specs = [vmodl.query.PropertyCollector.ObjectSpec(obj=view, skip=True, selectSet=[traversal])]
        else:
            obj_specs = [vmodl.query.PropertyCollector.ObjectSpec(obj=o) for o in objs]
            if not obj_specs:
                return []
        spec = vmodl.query.PropertyCollector.FilterSpec(
            objectSet=obj_specs, propSet=[vmodl.query.PropertyCollector.PropertySpec(type=vimtype, pathSet=props)])
        options = vmodl.query.PropertyCollector.RetrieveOptions(maxObjects=self.PAGE)
        try:
            found = []
            page = pc.RetrievePropertiesEx([spec], options)
            while page is not None:
                found += [(item.obj, {p.name: p.val for p in item.propSet}) for item in page.objects]
                page = pc.ContinueRetrievePropertiesEx(page.token) if page.token else None
            return found
        finally:
            if view is not None:
                view.Destroy()

    def list_vms(self) -> list[tuple[object, str, str, str]]:
        """(ref, name, BIOS uuid, inventory path) of every VM (templates left out). The path
        is the one govc shows, /DC0/vm/folder/name, built from the folders' names and
        parents (two more reads, whatever the number of VMs)."""
        from pyVmomi import vim

        def read():
            rows = self._collect(vim.VirtualMachine, ["name", "config.uuid", "config.template", "parent"])
            tree = {ref._moId: (p.get("name", ""), p.get("parent"))
                    for kind in (vim.Folder, vim.Datacenter) for ref, p in self._collect(kind, ["name", "parent"])}
            return [(ref, p.get("name", ""), (p.get("config.uuid") or "").lower(),
                     _path(p.get("name", ""), p.get("parent"), tree))
                    for ref, p in rows if not p.get("config.template")]
        return self.call(read, " (list VMs)")

    def read_vm(self, ref: Any) -> VmFacts:
        def read() -> VmFacts:
            found = self._vms([ref])[0]
            if isinstance(found, FactError):
                raise found
            return found
        return self.call(read, " (read VM)")

    def read_host(self, ref: Any) -> HostFacts:
        def read() -> HostFacts:
            found = self._hosts([ref])[0]
            if isinstance(found, FactError):
                raise found
            return found
        return self.call(read, " (read ESXi host)")

    def read_fleet(self, refs: list) -> tuple[list[VmFacts | FactError], dict[str, HostFacts | FactError]]:
        """The VMs `refs` and their ESXi hosts (by host moId), in one retrieval each under one
        deadline (the config's timeout for the whole read, not per VM)."""
        def read():
            vms = self._vms(refs)
            host_refs = list({vm.host_ref._moId: vm.host_ref for vm in vms
                              if isinstance(vm, VmFacts) and vm.host_ref is not None}.values())
            hosts = dict(zip((h._moId for h in host_refs), self._hosts(host_refs)))
            return vms, hosts
        return self.call(read, " (read VMs)")

    def _vms(self, refs: list) -> list[VmFacts | FactError]:
        """Each VM's facts, or a FactError for a VM gone since it was listed: one paged
        retrieval of the six properties, parsed without pyVmomi's deserializer (bulkread)."""
        from pyVmomi import VmomiSupport, vim

        from .bulkread import retrieve_vms
        stub = self._si._stub
        rows = retrieve_vms(stub, self._service_content().propertyCollector._moId, [r._moId for r in refs],
                            self.PAGE)
        out: list[VmFacts | FactError] = []
        for ref in refs:
            raw = rows.get(ref._moId)
            if raw is None:  # deleted between the listing and this read
                out.append(FactError(f"vSphere {self.cfg.endpoint}: VM {ref._moId} is gone"))
                continue
            nics: list[tuple[int, str]] = []
            for type_name, key, unit in raw.devices:
                try:
                    cls = VmomiSupport.GetWsdlType("urn:vim25", type_name)
                except KeyError:
                    continue  # a device type this pyVmomi does not know is no NIC it could name
                if issubclass(cls, vim.vm.device.VirtualEthernetCard):
                    nics.append((_ethernet_index(unit, key, len(nics)), _virtual_dev(type_name)))
            host = vim.HostSystem(raw.host, stub) if raw.host else None
            out.append(VmFacts(raw.name, raw.uuid, raw.extra, raw.affinity, tuple(sorted(nics)), host))
        return out

    def _hosts(self, refs: list) -> list[HostFacts | FactError]:
        """Each host's facts, or the FactError of that host alone (its VMs' VMX checks still run)."""
        from pyVmomi import vim
        rows = {ref._moId: p for ref, p in self._collect(vim.HostSystem, [
            "name", "config.hyperThread", "config.powerSystemInfo", "configManager.advancedOption"], refs)}
        out: list[HostFacts | FactError] = []
        for ref in refs:
            p = rows.get(ref._moId)
            if p is None:
                out.append(FactError(f"vSphere {self.cfg.endpoint}: ESXi host {ref._moId} is gone"))
                continue
            options: dict[str, str] = {}
            manager: Any = p.get("configManager.advancedOption")
            try:
                for key in HOST_OPTIONS if manager is not None else ():  # none: nothing collected
                    try:
                        for opt in manager.QueryView(key):  # one request per host: no bulk form exists
                            options[opt.key] = str(opt.value)
                    except vim.fault.InvalidName:
                        pass  # not on this ESXi version: the check says "not collected"
            except Exception as e:  # noqa: BLE001 - this host's options only; the others are read
                out.append(_explain(self.cfg, e))
                continue
            ht = p.get("config.hyperThread")
            power = p.get("config.powerSystemInfo")
            policy = power.currentPolicy.shortName if power is not None and power.currentPolicy else None
            out.append(HostFacts(p.get("name", ""), options, getattr(ht, "available", None),
                                 getattr(ht, "active", None), getattr(ht, "config", None), policy))
        return out


def _ethernet_index(unit: int | None, key: int, position: int) -> int:
    if unit is not None and unit >= ETHERNET_FIRST_UNIT and unit not in SRIOV_UNITS:
        return unit - ETHERNET_FIRST_UNIT
    if ETHERNET_KEY_BASE <= key < ETHERNET_KEY_BASE + 1000:
        return key - ETHERNET_KEY_BASE
    return position  # a key outside the usual range: the order of the device list


def _virtual_dev(type_name: str) -> str:
    """The VMX `ethernetN.virtualDev` value of a device type (VirtualVmxnet3 -> vmxnet3)."""
    return {"VirtualVmxnet3": "vmxnet3", "VirtualVmxnet3Vrdma": "vrdma", "VirtualE1000e": "e1000e",
            "VirtualE1000": "e1000", "VirtualVmxnet2": "vmxnet2", "VirtualPCNet32": "vlance",
            "VirtualSriovEthernetCard": "sriov"}.get(type_name, type_name.replace("Virtual", "").lower())


def _path(name: str, parent: Any, tree: dict) -> str:
    parts = [name]
    for _ in range(64):  # folders nest; a bound, not a real limit
        if parent is None or parent._moId not in tree:
            break
        parent_name, parent = tree[parent._moId]
        if parent is None:
            break  # the root folder ("Datacenters") is not part of the path
        parts.append(parent_name)
    return "/" + "/".join(reversed(parts))


def match_names(vms: list, patterns: list[str]) -> list:
    """VMs whose name matches one of the globs, or whose inventory path does for a glob
    with a `/` (a folder: /DC0/vm/bigip/*); fnmatch, case-sensitive as vCenter names are."""
    return [vm for vm in vms if any(fnmatch.fnmatchcase(vm[3] if "/" in p else vm[1], p) for p in patterns)]
