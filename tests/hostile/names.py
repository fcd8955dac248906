"""Hostile snapshots: shipped examples with one name in each channel renamed to one an
attacker could give it (the kernel or the file system accepts it).

`rename(root, old, new)` renames `old` everywhere in a copied snapshot: path components,
link targets and file contents (bytes, so a name that is not UTF-8 works too).
"""

from __future__ import annotations

import os
from pathlib import Path

# Interface names dev_valid_name() accepts (<= 15 bytes, no '/', ':' or blank)
IFACE_SUBST = b"$(touch${IFS}x)"[:15]
IFACE_BACKTICK = b"`reboot`"
IFACE_SEMI = b"a;reboot"
IFACE_ID = b"$(id>x)"
IFACE_BYTES = b"e\xff\x1b[2J"  # not UTF-8, ESC clears a terminal
HOSTNAME = b"hanadb01\ntouch /tmp/x #{{ lookup('pipe','reboot') }}\ncommand: {x: {exec: reboot}}"
MOUNT = b"/hana/sh\n/dev/sdz1 /etc xfs {{ lookup('pipe','reboot') }}"
NFS_SOURCE = b"anf:/v\n/dev/sdz1 /etc xfs"
FILE_NAME = b"{{ lookup('pipe','reboot') }}$(reboot)\n.conf"
SCRIPT = b"<script>alert(1)</script>\x1b[2J\x07"


def _replace(data: bytes, old: bytes, new: bytes) -> bytes:
    return data.replace(old, new)


def rename(root: Path, old: bytes, new: bytes, contents: bool = True) -> None:
    """`old` becomes `new` in every path component, link target and (with `contents`) file."""
    broot = os.fsencode(root)
    for dirpath, dirnames, filenames in os.walk(broot, topdown=False):
        for name in filenames + dirnames:
            path = os.path.join(dirpath, name)
            if os.path.islink(path):
                target = os.readlink(path)
                if old in target:
                    os.unlink(path)
                    os.symlink(target.replace(old, new), path)
            elif contents and os.path.isfile(path):
                with open(path, "rb") as f:
                    data = f.read()
                if old in data:
                    with open(path, "wb") as f:
                        f.write(data.replace(old, new))
            if old in name:
                os.rename(path, os.path.join(dirpath, name.replace(old, new)))


def write(root: Path, rel: bytes, data: bytes) -> None:
    path = os.path.join(os.fsencode(root), rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def read(root: Path, rel: str) -> bytes:
    return (root / rel).read_bytes()


VMX_NAME = b"hanavm01\ntouch x\nreboot #.vmx"  # no "/": a file name
MOUNT_NEWLINE = b"/sas\\012data"  # as mountinfo and fstab write a newline (\012)
SOURCE_NEWLINE = b"10.0.2.4:/sas\\012config"
MOUNT_JINJA = b"/sashome{{lookup('pipe','reboot')}}"
SYSCTL_FILE = b"90-{{lookup('pipe','reboot')}}$(reboot)\n.conf"


def hostile_vmware(dest: Path, copy_host) -> Path:
    """vmware-vmxnet3-default (profile auto): NIC, IRQ, irqbalance and .vmx remediation on
    hostile interface names, a hostname with a newline, Jinja and goss YAML, a .vmx file name
    with a newline."""
    root = copy_host("vmware-vmxnet3-default", dest)
    rename(root, b"ens224", IFACE_ID)
    rename(root, b"ens192", IFACE_BACKTICK)
    os.unlink(os.path.join(os.fsencode(root), b"etc/sysconfig/network-scripts/ifcfg-" + IFACE_ID))  # dispatcher
    write(root, b"proc/sys/kernel/hostname", HOSTNAME + b"\n")
    rename(root, b"hanavm01.vmx", VMX_NAME, contents=False)
    return root


def hostile_sas(dest: Path, copy_host, breaker) -> Path:
    """sas-anf broken (profile azure-sas-grid-anf): fstab, sysctl and udev remediation with a
    mount point and an NFS source holding a newline, a mount point and a sysctl.d file name
    holding Jinja and $(...), interface names not UTF-8 and with `;`, and a hostname with
    markup, ESC and BEL."""
    root = copy_host("sas-anf", dest)
    breaker(root)
    rename(root, b"enP45612s1", IFACE_SEMI)
    rename(root, b"eth0", IFACE_BYTES)
    write(root, b"proc/sys/kernel/hostname", SCRIPT + b"\n")
    for rel, old, new in ((b"proc/self/mountinfo", b" /sasdata ", b" " + MOUNT_NEWLINE + b" "),
                          (b"etc/fstab", b" /sasdata ", b" " + MOUNT_NEWLINE + b" "),
                          (b"proc/self/mountinfo", b" 10.0.2.4:/sasconfig ", b" " + SOURCE_NEWLINE + b" "),
                          (b"proc/self/mountinfo", b" /sashome ", b" " + MOUNT_JINJA + b" "),
                          (b"etc/fstab", b" /sashome ", b" " + MOUNT_JINJA + b" ")):
        path = os.path.join(os.fsencode(root), rel)
        with open(path, "rb") as f:
            data = f.read()
        data = data.replace(old, new)
        if rel == b"etc/fstab" and b"/sasconfig" in data:  # built from the mount: its source is the one written
            data = b"\n".join(line for line in data.split(b"\n") if b"/sasconfig " not in line) + b"\n"
        with open(path, "wb") as f:
            f.write(data)
    with open(os.path.join(os.fsencode(root), b"etc/fstab"), "rb+") as f:  # /sashome loses vers=3: a fstab step
        data = f.read().replace(b"wsize=65536,vers=3.0,", b"wsize=65536,")
        f.seek(0)
        f.truncate()
        f.write(data)
    write(root, b"etc/sysctl.d/" + SYSCTL_FILE, b"vm.dirty_bytes = 1\n")  # an admin's other value: commented out
    return root


KEYFILE = b"{{lookup('pipe','reboot')}}$(reboot)\n.nmconnection"


def hostile_keyfile(dest: Path, copy_host, breaker) -> Path:
    """vmware-vmxnet3-tuned with its NetworkManager keyfile edited (profile vmware-sap-hana):
    the [ethtool] fix goes into a keyfile whose name and id hold Jinja and $(...)."""
    root = copy_host("vmware-vmxnet3-tuned", dest)
    breaker(root)
    keyfiles = os.path.join(os.fsencode(root), b"etc/NetworkManager/system-connections")
    old = os.path.join(keyfiles, b"ens224.nmconnection")
    with open(old, "rb") as f:
        data = f.read()
    data = data.replace(b"id=ens224", b"id={{ lookup('pipe','reboot') }}$(reboot)", 1)
    with open(old, "wb") as f:
        f.write(data)
    os.rename(old, os.path.join(keyfiles, KEYFILE))
    return root
