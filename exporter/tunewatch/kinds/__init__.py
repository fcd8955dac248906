"""Check kinds (templates): the logic behind declarative checks.

Each kind is a module with `VARS_SCHEMA` and `evaluate(target) -> list[ObjectResult]`.
A check in checks/ names its kind; adding a check is YAML, adding a kind is code (its
module here and its row in PROVIDES).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType

# Every kind, and what it provides besides its module kinds/<name>.py: the remediation
# template (remediate/templates.py TEMPLATES; "manual": a note, no command) and the goss test
# (outputs/goss.py TEMPLATES), or, after "none: ", why there is none. tests/test_kinds.py holds
# both tables to this one: a new kind is a module and a row here.
PROVIDES: dict[str, tuple[str, str]] = {  # kind: (remediation, goss)
    "accelerated_networking": ("manual", "none: the VF's name changes after a redeploy and goss cannot glob "
                                         "sys/class/net/*/lower_*"),
    "bdi_readahead": ("bdi_readahead", "_readahead"),
    "esxcli_setting": ("manual", "none: ESXi host settings are read with esxcli on the hypervisor, not on this host"),
    "irq_affinity": ("irq_placement", "none: needs cpulist arithmetic (smp_affinity_list within the node's CPUs minus "
                                      "exclude_cpus); goss matchers cannot compute subsets"),
    "irq_affinity_persistent": ("irq_affinity_persistent", "none: searches every enabled boot mechanism (dispatcher "
                                                           "scripts, enabled units and the scripts they run, udev "
                                                           "rules) for pinning that names the NIC; goss cannot follow "
                                                           "enabled units to their scripts"),
    "irq_spread": ("irq_placement", "none: compares the IRQs of a NIC with each other (CPUs per IRQ, IRQs per CPU); a "
                                    "goss test sees one resource at a time"),
    "nfs_mount_options": ("nfs_mount_options", "_mount"),
    "nfs_nconnect": ("nfs_nconnect", "_nconnect"),
    "nic_channels": ("nic_channels", "_ethtool_command"),
    "nic_ethtool": ("nic_ethtool", "_ethtool_command"),
    "nic_settings_persistent": ("nic_settings_persistent", "none: merges ifcfg, NetworkManager keyfiles, .link files, "
                                                           "udev rules and scripts by ethtool's option names; goss file"
                                                           " patterns cannot parse them"),
    "process_absent": ("process_absent", "_process"),
    "service_disabled": ("service_disabled", "_service"),
    "sysctl": ("sysctl", "_sysctl"),
    "tuned_profile": ("tuned_profile", "_tuned"),
    "udev_attr": ("udev_attr", "_udev"),
    "vmx_cpu_affinity": ("manual", "none: the .vmx file is on the ESXi datastore, not on this host"),
    "vmx_option": ("manual", "none: the .vmx file is on the ESXi datastore, not on this host"),
}
NAMES = tuple(PROVIDES)


class _Kinds(Mapping):
    """name -> kind module, imported on first use: a scan imports the kinds its profile
    selects, not all 18 and every fact reader and parser they pull in (docs/architecture.md#start-up-cost)."""

    def __getitem__(self, name: str) -> ModuleType:
        if name not in NAMES:
            raise KeyError(name)
        module = f"{__name__}.{name}"
        __import__(module)  # importlib.import_module without importing importlib (docs/architecture.md#start-up-cost)
        return sys.modules[module]

    def __iter__(self):
        return iter(NAMES)

    def __len__(self) -> int:
        return len(NAMES)

    def __contains__(self, name: object) -> bool:
        return name in NAMES


KINDS = _Kinds()
