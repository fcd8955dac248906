"""Every up synthetic Azure NIC (hv_netvsc) has an Accelerated Networking VF under it."""

from __future__ import annotations

from .base import FAIL, PASS, Fix, ObjectResult, Target

VARS_SCHEMA = {"type": "object", "additionalProperties": False,
               "properties": {"vf_drivers": {"type": "array", "items": {"type": "string"}, "minItems": 1}}}


# Accelerated Networking is a property of the Azure NIC resource, set from outside the VM.
# The VM must be stopped (deallocated) to change it and its size must support it
# (learn.microsoft.com "Manage Accelerated Networking through the portal / CLI").
AZ_COMMAND = "az network nic update --accelerated-networking true"
AZ_NOTE = ("run it from the Azure CLI with --resource-group and --name of this VM's NIC, with the VM "
           "deallocated (az vm deallocate) first and started again after; the VM size must support "
           "Accelerated Networking")


def evaluate(t: Target) -> list[ObjectResult]:
    vf_drivers = set(t.vars.get("vf_drivers", ["mlx4_en", "mlx4_core", "mlx5_core", "mana"]))
    results = []
    for iface in t.interfaces():
        if not iface.up:
            continue
        every = t.facts.interfaces
        vfs = [name for name, drv in zip(iface.lowers, iface.lower_drivers)
               if drv in vf_drivers and name in every and every[name].up]  # a down VF carries nothing
        if vfs:
            results.append(ObjectResult(iface.name, PASS, "VF present", ",".join(vfs),
                                        f"{iface.name} is accelerated by {','.join(vfs)}"))
        else:
            results.append(ObjectResult(iface.name, FAIL, "VF present", "no VF",
                                        f"{iface.name} has no Accelerated Networking VF: enable it on the Azure NIC "
                                        f"({AZ_COMMAND}) and check the VM size",
                                        fix=Fix(command=AZ_COMMAND, note=AZ_NOTE)))
    return results
