"""Every up synthetic Azure NIC (hv_netvsc) has an up Accelerated Networking VF under it.

No VF at all is fixed on the Azure side; a VF that is there but down is fixed in the guest.
"""

from __future__ import annotations

from .._escape import sh
from ..results import FAIL, PASS, Fix, ObjectResult
from .base import Target

# its objects are interfaces (eth1, eth1/irq45): one the kernel could not have named is an error
PER_INTERFACE = True
VARS_SCHEMA = {"type": "object", "additionalProperties": False,
               "properties": {"vf_drivers": {"type": "array", "items": {"type": "string"}, "minItems": 1}}}


# Accelerated Networking is a property of the Azure NIC resource, set from outside the VM.
# The VM must be stopped (deallocated) to change it and its size must support it
# (learn.microsoft.com "Manage Accelerated Networking through the portal / CLI").
AZ_COMMAND = "az network nic update --accelerated-networking true"
AZ_NOTE = ("run it from the Azure CLI with --resource-group and --name of this VM's NIC, with the VM "
           "deallocated (az vm deallocate) first and started again after; the VM size must support "
           "Accelerated Networking")

# hv_netvsc switches the data path to the VF when the VF comes up (netvsc_vf_changed in
# drivers/net/hyperv/netvsc_drv.c) and back to the synthetic NIC when it goes down.
VF_DOWN_NOTE = ("hv_netvsc moves the data path to the VF as soon as it is up; then find what set it down: the "
                "VF must have no network profile or script of its own (Azure images mark it unmanaged with a "
                "udev rule: azure-vm-utils' 10-azure-unmanaged-sriov.rules, older WALinuxAgent's "
                "68-azure-sriov-nm-unmanaged.rules)")


def evaluate(t: Target) -> list[ObjectResult]:
    vf_drivers = set(t.vars.get("vf_drivers", ["mlx4_en", "mlx4_core", "mlx5_core", "mana"]))
    results = []
    for iface in t.interfaces():
        if not iface.up:
            continue
        every = t.facts.interfaces
        present = [name for name, drv in zip(iface.lowers, iface.lower_drivers) if drv in vf_drivers and name in every]
        vfs = [name for name in present if every[name].up]  # a down VF carries nothing
        if vfs:
            results.append(ObjectResult(iface.name, PASS, "VF present", ",".join(vfs),
                                        f"{iface.name} is accelerated by {','.join(vfs)}"))
        elif present:
            # Azure gave the VF; the guest took it down. Enabling AN again changes nothing.
            command = f"ip link set {sh(present[0])} up"
            results.append(ObjectResult(iface.name, FAIL, "VF present", f"{present[0]} down",
                                        f"{iface.name}'s Accelerated Networking VF {present[0]} is down, so traffic "
                                        f"stays on the synthetic path: {command}",
                                        fix=Fix(command=command, note=VF_DOWN_NOTE)))
        else:
            results.append(ObjectResult(iface.name, FAIL, "VF present", "no VF",
                                        f"{iface.name} has no Accelerated Networking VF: enable it on the Azure NIC "
                                        f"({AZ_COMMAND}) and check the VM size",
                                        fix=Fix(command=AZ_COMMAND, note=AZ_NOTE)))
    return results
