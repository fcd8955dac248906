"""Check kinds (templates): the logic behind declarative checks.

Each kind is a module with `VARS_SCHEMA` and `evaluate(target) -> list[ObjectResult]`.
A check in checks/ names its kind; adding a check is YAML, adding a kind is code (its
module here and its name in NAMES).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType

NAMES = ("accelerated_networking", "bdi_readahead", "esxcli_setting", "irq_affinity", "irq_affinity_persistent",
         "irq_spread", "nfs_mount_options", "nfs_nconnect", "nic_channels", "nic_ethtool", "nic_settings_persistent",
         "process_absent", "service_disabled", "sysctl", "tuned_profile", "udev_attr", "vmx_cpu_affinity",
         "vmx_option")


class _Kinds(Mapping):
    """name -> kind module, imported on first use: a scan imports the kinds its profile
    selects, not all 18 and every fact reader and parser they pull in (issue 22)."""

    def __getitem__(self, name: str) -> ModuleType:
        if name not in NAMES:
            raise KeyError(name)
        return importlib.import_module(f"{__name__}.{name}")

    def __iter__(self):
        return iter(NAMES)

    def __len__(self) -> int:
        return len(NAMES)

    def __contains__(self, name: object) -> bool:
        return name in NAMES


KINDS = _Kinds()
