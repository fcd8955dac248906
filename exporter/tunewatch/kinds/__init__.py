"""Check kinds (templates): the logic behind declarative checks.

Each kind is a module with `VARS_SCHEMA` and `evaluate(target) -> list[ObjectResult]`.
A check in checks/ names its kind; adding a check is YAML, adding a kind is code.
"""

from __future__ import annotations

from . import (accelerated_networking, bdi_readahead, esxcli_setting, irq_affinity, irq_affinity_persistent,
               irq_spread, nfs_mount_options, nfs_nconnect, nic_channels, nic_ethtool, nic_settings_persistent,
               process_absent, service_disabled, sysctl, tuned_profile, udev_attr, vmx_cpu_affinity, vmx_option)

KINDS = {module.__name__.rsplit(".", 1)[1]: module for module in (
    accelerated_networking, bdi_readahead, esxcli_setting, irq_affinity, irq_affinity_persistent, irq_spread,
    nfs_mount_options, nfs_nconnect, nic_channels, nic_ethtool, nic_settings_persistent, process_absent,
    service_disabled, sysctl, tuned_profile, udev_attr, vmx_cpu_affinity, vmx_option)}
