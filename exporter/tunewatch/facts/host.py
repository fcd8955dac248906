"""Host identity: hostname, kernel, OS, platform and boot time."""

from __future__ import annotations

from .._record import FrozenRecord
from ..host.fs import FS
from ..parsers.proc_stat import parse_btime
from ..parsers.shellvars import parse_shell_assignments

AZURE_ASSET_TAG = "7783-7084-3265-9085-8269-3286-77"


class Host(FrozenRecord):
    __slots__ = ("hostname", "kernel", "os_id", "os_version", "os_name", "platform", "product", "boot_time", "boot_id")
    hostname: str
    kernel: str
    os_id: str
    os_version: str
    os_name: str
    platform: str  # "azure", "vmware" or "other" (Hyper-V on premises included)
    product: str
    boot_time: int | None
    # the kernel's random id of this boot (random(4)): a remediation written for this scan
    # refuses to run after a reboot, when IRQ numbers and runtime values may have changed
    boot_id: str | None

    def __init__(self, hostname: str, kernel: str, os_id: str, os_version: str, os_name: str, platform: str,
                 product: str, boot_time: int | None, boot_id: str | None = None):
        self.hostname = hostname
        self.kernel = kernel
        self.os_id = os_id
        self.os_version = os_version
        self.os_name = os_name
        self.platform = platform
        self.product = product
        self.boot_time = boot_time
        self.boot_id = boot_id


def detect_platform(vendor: str, asset_tag: str) -> str:
    """Azure by its DMI chassis asset tag only: Hyper-V on premises has the same
    "Microsoft Corporation" vendor string but no Azure services (no Accelerated
    Networking), so it is "other"."""
    if asset_tag == AZURE_ASSET_TAG:
        return "azure"
    if vendor.startswith("VMware"):
        return "vmware"
    return "other"


def read_host(fs: FS) -> Host:
    release_text = fs.read_text("etc/os-release") or fs.read_text("usr/lib/os-release") or ""
    try:
        release = parse_shell_assignments(release_text, "etc/os-release")
    except ValueError:
        release = {}
    stat = fs.read_text("proc/stat")
    try:
        boot_time = parse_btime(stat) if stat is not None else None
    except ValueError:
        boot_time = None
    vendor = fs.read_value("sys/class/dmi/id/sys_vendor") or ""
    asset_tag = fs.read_value("sys/class/dmi/id/chassis_asset_tag") or ""
    return Host(
        hostname=fs.read_value("proc/sys/kernel/hostname") or "unknown",
        kernel=fs.read_value("proc/sys/kernel/osrelease") or "unknown",
        os_id=release.get("ID", "unknown"),
        os_version=release.get("VERSION_ID", ""),
        os_name=release.get("PRETTY_NAME", release.get("NAME", "unknown")),
        platform=detect_platform(vendor, asset_tag),
        product=fs.read_value("sys/class/dmi/id/product_name") or "",
        boot_time=boot_time,
        boot_id=fs.read_value("proc/sys/kernel/random/boot_id"),
    )
