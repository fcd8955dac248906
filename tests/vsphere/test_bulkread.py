"""The fleet read (vsphere/bulkread.py) gives the VmFacts pyVmomi's own deserializer gives.

Central mode reads every selected VM in one paged RetrievePropertiesEx and parses the answer
with ElementTree instead of pyVmomi's deserializer. Oracle: the same six properties read
through pyVmomi (PropertyCollector objects), turned into VmFacts the way the client did
before, on every VM of the fleet vcsim (vmxnet3 and e1000 NICs, VMX options, folders), with
pages smaller than the fleet so the continuation token is followed.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from tunewatch.vsphere import bulkread
from tunewatch.vsphere.client import Session, VmFacts, _ethernet_index, _virtual_dev
from tunewatch.vsphere.config import load_config


def pyvmomi_facts(session: Session, refs: list) -> list[VmFacts]:
    from pyVmomi import vim
    rows = {ref._moId: p for ref, p in session._collect(vim.VirtualMachine, list(bulkread.VM_PROPS), refs)}
    out = []
    for ref in refs:
        p = rows[ref._moId]
        extra = {o.key: "" if o.value is None else str(o.value) for o in p.get("config.extraConfig") or []}
        affinity = p.get("config.cpuAffinity")
        cpus = tuple(sorted(affinity.affinitySet)) if affinity is not None and affinity.affinitySet else None
        nics: list[tuple[int, str]] = []
        for dev in p.get("config.hardware.device") or []:
            if isinstance(dev, vim.vm.device.VirtualEthernetCard):
                nics.append((_ethernet_index(dev.unitNumber, dev.key, len(nics)),
                             _virtual_dev(type(dev).__name__.rsplit(".", 1)[-1])))
        out.append(VmFacts(p.get("name", ""), (p.get("config.uuid") or "").lower(), extra, cpus,
                           tuple(sorted(nics)), p.get("runtime.host")))
    return out


def test_the_bulk_read_equals_pyvmomis_on_every_vm_of_the_fleet(fleet, tmp_path):
    session = Session(load_config(str(fleet.config(tmp_path)))).connect()
    try:
        refs = [vm[0] for vm in session.list_vms()]
        assert len(refs) >= 8  # vcsim's own VMs and the four the fixture made
        session.PAGE = 3  # several pages: the ContinueRetrievePropertiesEx token is followed
        bulk = session.call(lambda: session._vms(refs))
        oracle = session.call(lambda: pyvmomi_facts(session, refs))
    finally:
        session.close()
    assert bulk == oracle
    assert [vm.host_ref._moId for vm in bulk] == [vm.host_ref._moId for vm in oracle]
    tuned = next(vm for vm in bulk if vm.name == "hana-tuned")
    assert tuned.nics == ((0, "vmxnet3"), (1, "vmxnet3")) and tuned.extra_config["ethernet1.udpRSS"] == "1"


def test_managed_object_ids_are_escaped_in_the_request():
    moids = ['vm-1"/><obj type="HostSystem">host-9', "vm-<2>&"]
    body = bulkread._request("propertyCollector", moids, 100)
    root = ET.fromstring(body)
    sent = [o.text for o in root.iter(bulkread.VIM + "obj")]
    assert sent == moids
    assert bulkread._continue("pc", "tok</token>").count("<token>") == 1
