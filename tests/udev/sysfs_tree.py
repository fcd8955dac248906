"""The devices of systemd's test/udev-test.py (its sys tree, test/sys-script.py) as a
sysfs-shaped snapshot directory: device directories with `uevent`, `subsystem` and `driver`
links and attribute files, the way the kernel lays them out. Only the devices and
attributes the translated cases use."""

from __future__ import annotations

import os

PCI = "sys/devices/pci0000:00"
SCSI = f"{PCI}/0000:00:1f.2/host0/target0:0:0/0:0:0:0"
SDA = f"{SCSI}/block/sda"
USB = f"{PCI}/0000:00:1d.7/usb5/5-2/5-2:1.0"
ACM = f"{USB}/tty/ttyACM0"
DEVICES = {  # short name -> devpath under sys/
    "sda": SDA, "console": "sys/devices/virtual/tty/console", "ttyACM0": ACM,
    "fake!blockdev0": "sys/devices/virtual/block/fake!blockdev0",
    **{f"sda{n}": f"{SDA}/sda{n}" for n in (1, 5, 6, 7, 8, 9, 10)},
}


def _write(root: str, rel: str, text: str) -> None:
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def _link(root: str, rel: str, target_rel: str) -> None:
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    os.symlink(os.path.relpath(os.path.join(root, target_rel), os.path.dirname(path)), path)


def _device(root: str, rel: str, subsystem: str | None, driver: str | None = None, uevent: str = "",
            **attrs: str) -> None:
    _write(root, f"{rel}/uevent", uevent)
    if subsystem:
        _link(root, f"{rel}/subsystem", f"sys/{'class' if subsystem in ('block', 'tty') else 'bus'}/{subsystem}")
    if driver:
        _link(root, f"{rel}/driver", f"sys/bus/{subsystem}/drivers/{driver}")
    for name, value in attrs.items():
        _write(root, f"{rel}/{name.replace('__', ':').replace('_plus_', '+')}", value)


def build(root: str) -> None:
    _device(root, f"{PCI}/0000:00:1f.2", "pci", "ahci", "DRIVER=ahci\nPCI_ID=8086:27C5\n", vendor="0x8086\n",
            device="0x27c5\n")
    _device(root, f"{PCI}/0000:00:1f.2/host0", "scsi", None, "DEVTYPE=scsi_host\n")
    _device(root, f"{PCI}/0000:00:1f.2/host0/target0:0:0", "scsi", None, "DEVTYPE=scsi_target\n")
    _device(root, SCSI, "scsi", "sd", "DEVTYPE=scsi_device\nDRIVER=sd\n", vendor="ATA     \n",
            model="ST910021AS      \n", rev="4.06\n", type="0\n", scsi_level="6\n", queue_depth="1\n",
            whitespace_test="WHITE  SPACE   \n")
    _device(root, SDA, "block", None, "MAJOR=8\nMINOR=0\nDEVNAME=sda\nDEVTYPE=disk\n", dev="8:0\n", size="195371568\n",
            range="16\n", test_empty_file="", test__colon_plus_plus="foo\n")
    os.makedirs(os.path.join(root, SDA, "queue"), exist_ok=True)
    _write(root, f"{SDA}/queue/nr_requests", "128\n")
    for n in (1, 5, 6, 7, 8, 9, 10):
        _device(root, f"{SDA}/sda{n}", "block", None, f"MAJOR=8\nMINOR={n}\nDEVNAME=sda{n}\nDEVTYPE=partition\n",
                dev=f"8:{n}\n", start="63\n", size="195371442\n")
    _device(root, f"{PCI}/0000:00:1d.7", "pci", "ehci_hcd", vendor="0x8086\n")
    _device(root, f"{PCI}/0000:00:1d.7/usb5", "usb", "usb", "DEVTYPE=usb_device\n", idVendor="0000\n")
    _device(root, f"{PCI}/0000:00:1d.7/usb5/5-2", "usb", "usb", "DEVTYPE=usb_device\n", idVendor="0fce\n",
            idProduct="007b\n", serial="354172020305000\n")
    _device(root, USB, "usb", "cdc_acm", "DEVTYPE=usb_interface\n", bInterfaceClass="02\n")
    _device(root, ACM, "tty", None, "MAJOR=166\nMINOR=0\nDEVNAME=ttyACM0\n", dev="166:0\n")
    _device(root, "sys/devices/virtual/tty/console", "tty", None, "MAJOR=5\nMINOR=1\nDEVNAME=console\n", dev="5:1\n")
    _device(root, "sys/devices/virtual/block/fake!blockdev0", "block", None,
            "MAJOR=4095\nMINOR=1\nDEVNAME=fake/blockdev0\nDEVTYPE=disk\n", dev="4095:1\n")
    _write(root, "etc/passwd", "root:x:0:0:root:/root:/bin/bash\n")
