"""The VMs of a fleet in one paged RetrievePropertiesEx, parsed with ElementTree.

pyVmomi turns every property of the answer into Python objects through its SOAP
deserializer, a Python callback per XML node: for 1,000 VMs and their device lists that is
most of a fleet scan (about 3x `govc object.collect` of the same properties). Central mode
needs six properties of each VM, so this module asks for exactly those over the session
pyVmomi logged in (its connection pool, cookie and SOAPAction) and reads the answer with
the C parser. Same request, same answer, same VmFacts as `Session.read_vm` builds from
pyVmomi's objects (tests/vsphere compare the two on a vcsim inventory).

Every value that goes into the request (managed object ids) is XML-escaped; a SOAP fault
becomes a FactError with the fault's text.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from xml.sax.saxutils import escape

from ..errors import FactError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any
    from xml.etree.ElementTree import Element

VIM = "{urn:vim25}"
XSI_TYPE = "{http://www.w3.org/2001/XMLSchema-instance}type"
SOAP_FAULT = "{http://schemas.xmlsoap.org/soap/envelope/}Fault"
VM_PROPS = ("name", "config.uuid", "config.extraConfig", "config.cpuAffinity", "config.hardware.device",
            "runtime.host")
_ENVELOPE = ('<?xml version="1.0" encoding="UTF-8"?>\n<soapenv:Envelope xmlns:soapenv='
             '"http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">'
             '<soapenv:Body>{}</soapenv:Body></soapenv:Envelope>')


class RawVm:
    """One VM's properties as read: device entries are (xsi type, key, unit number)."""
    __slots__ = ("moid", "name", "uuid", "extra", "affinity", "devices", "host")

    def __init__(self, moid: str):
        self.moid = moid
        self.name = ""
        self.uuid = ""
        self.extra: dict[str, str] = {}
        self.affinity: tuple[int, ...] | None = None
        self.devices: list[tuple[str, int, int | None]] = []
        self.host: str | None = None


def _request(moid: str, vm_moids: list[str], page: int) -> str:
    props = "".join(f"<pathSet>{p}</pathSet>" for p in VM_PROPS)
    objs = "".join(f'<objectSet><obj type="VirtualMachine">{escape(m)}</obj></objectSet>' for m in vm_moids)
    return _ENVELOPE.format(
        f'<RetrievePropertiesEx xmlns="urn:vim25"><_this type="PropertyCollector">{escape(moid)}</_this>'
        f"<specSet><propSet><type>VirtualMachine</type>{props}</propSet>{objs}</specSet>"
        f"<options><maxObjects>{page}</maxObjects></options></RetrievePropertiesEx>")


def _continue(moid: str, token: str) -> str:
    return _ENVELOPE.format(
        f'<ContinueRetrievePropertiesEx xmlns="urn:vim25"><_this type="PropertyCollector">{escape(moid)}</_this>'
        f"<token>{escape(token)}</token></ContinueRetrievePropertiesEx>")


def _post(stub: Any, body: str) -> bytes:
    """One SOAP exchange over pyVmomi's logged-in stub (its pooled connection and cookie)."""
    headers = {"Cookie": stub.cookie, "SOAPAction": stub.versionId, "Content-Type": "text/xml; charset=UTF-8"}
    conn = stub.GetConnection()
    try:
        conn.request("POST", stub.path, body.encode("utf-8"), headers)
        resp = conn.getresponse()
        data = resp.read()
    except BaseException:
        conn.close()
        stub.DropConnections()
        raise
    stub.ReturnConnection(conn)
    if resp.status not in (200, 500):
        raise FactError(f"RetrievePropertiesEx: HTTP {resp.status} {resp.reason}")
    return data


def _text(el: Element, tag: str) -> str | None:
    child = el.find(VIM + tag)
    return None if child is None else (child.text or "")


def _fill(vm: RawVm, name: str, val: Any) -> None:
    if name == "name":
        vm.name = val.text or ""
    elif name == "config.uuid":
        vm.uuid = (val.text or "").lower()
    elif name == "config.extraConfig":
        for opt in val:
            key = _text(opt, "key")
            if key is not None:
                vm.extra[key] = _text(opt, "value") or ""
    elif name == "config.cpuAffinity":
        cpus = [int(c.text) for c in val.findall(VIM + "affinitySet") if c.text]
        vm.affinity = tuple(sorted(cpus)) if cpus else None
    elif name == "config.hardware.device":
        for dev in val:
            unit = _text(dev, "unitNumber")
            vm.devices.append((dev.get(XSI_TYPE, "").rsplit(":", 1)[-1], int(_text(dev, "key") or -1),
                               int(unit) if unit else None))
    elif name == "runtime.host":
        vm.host = val.text


def _page(data: bytes, found: dict[str, RawVm]) -> str | None:
    """Add one answer's VMs to `found`; its continuation token, if any."""
    root = ET.fromstring(data)
    fault = root.find(f".//{SOAP_FAULT}")
    if fault is not None:
        raise FactError(f"RetrievePropertiesEx: {(fault.findtext('faultstring') or 'SOAP fault').strip()}"[:500])
    ret = root.find(f".//{VIM}returnval")
    if ret is None:
        return None  # none of the objects exists any more
    for obj in ret.findall(VIM + "objects"):
        moid = _text(obj, "obj") or ""
        vm = found.setdefault(moid, RawVm(moid))
        for prop in obj.findall(VIM + "propSet"):
            val = prop.find(VIM + "val")
            if val is not None:
                _fill(vm, _text(prop, "name") or "", val)
    return _text(ret, "token")


def retrieve_vms(stub: Any, collector: str, vm_moids: list[str], page: int = 500) -> dict[str, RawVm]:
    """moId -> RawVm of the VMs that still exist, in pages of `page` objects."""
    found: dict[str, RawVm] = {}
    if not vm_moids:
        return found
    token = _page(_post(stub, _request(collector, vm_moids, page)), found)
    while token:
        token = _page(_post(stub, _continue(collector, token)), found)
    return found
