#!/usr/bin/env python3
"""Whole-host examples of Azure images as their distributions ship them (SPEC section 2,
"What distributions ship"), built on build_examples.py's Azure M-series host with the
configuration files those images really install: copied byte for byte from a distribution
package where a registry here ships one (tests/snapshots/packaged/, origins in its README),
else written from what the program is documented to do. Deterministic; run
`python3 tests/snapshots/build_distro_examples.py` and commit its output.

- azure-rhel9-sap-nm-unmanaged: RHEL 9.4 for SAP on Azure. azure-vm-utils' udev rule marks
  the Accelerated Networking VFs NM_UNMANAGED; the admin followed seed 000's Red Hat
  procedure (a dispatcher script running `ethtool -L <VF> combined 16`), which
  NetworkManager therefore never runs for the VFs.
- azure-ubuntu2404-netplan: Ubuntu 24.04 on Azure. cloud-init's netplan YAML names the
  synthetic NICs (netplan writes run/systemd/network/10-netplan-eth*.link from it at every
  boot); the VFs get 16 queues from a .link file matching their driver.

Kept apart from build_examples.py (already the generator of fifteen hosts): these two
start from its azure_m() host and only swap the distribution's network stack.
"""

from __future__ import annotations

import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import build_examples as be  # noqa: E402

PACKAGED = os.path.join(HERE, "packaged")

RHEL94 = """NAME="Red Hat Enterprise Linux"
VERSION="9.4 (Plow)"
ID="rhel"
ID_LIKE="fedora"
VERSION_ID="9.4"
PLATFORM_ID="platform:el9"
PRETTY_NAME="Red Hat Enterprise Linux 9.4 (Plow)"
ANSI_COLOR="0;31"
LOGO="fedora-logo-icon"
CPE_NAME="cpe:/o:redhat:enterprise_linux:9::baseos"
HOME_URL="https://www.redhat.com/"
DOCUMENTATION_URL="https://access.redhat.com/documentation/en-us/red_hat_enterprise_linux/9"
BUG_REPORT_URL="https://bugzilla.redhat.com/"

REDHAT_BUGZILLA_PRODUCT="Red Hat Enterprise Linux 9"
REDHAT_BUGZILLA_PRODUCT_VERSION=9.4
REDHAT_SUPPORT_PRODUCT="Red Hat Enterprise Linux"
REDHAT_SUPPORT_PRODUCT_VERSION="9.4"
"""

UBUNTU2404 = """PRETTY_NAME="Ubuntu 24.04.1 LTS"
NAME="Ubuntu"
VERSION_ID="24.04"
VERSION="24.04.1 LTS (Noble Numbat)"
VERSION_CODENAME=noble
ID=ubuntu
ID_LIKE=debian
HOME_URL="https://www.ubuntu.com/"
SUPPORT_URL="https://help.ubuntu.com/"
BUG_REPORT_URL="https://bugs.launchpad.net/ubuntu/"
PRIVACY_POLICY_URL="https://www.ubuntu.com/legal/terms-and-policies/privacy-policy"
UBUNTU_CODENAME=noble
LOGO=ubuntu-logo
"""

RHEL_KERNEL = "5.14.0-427.42.1.el9_4.x86_64"
UBUNTU_KERNEL = "6.8.0-1021-azure"
MACS = {"eth0": "00:0d:3a:2e:9c:41", "eth1": "00:0d:3a:2e:b5:f7"}  # a VF has its master's MAC

# seed 000, "On RedHat 8 or above the following procedure can be used to permanently reduce
# the queues to 16": steps 1-5, eth0 substituted by the Accelerated Networking interfaces
# ("Substitute eth0 for the active Accelerated Networking interface"), chmod 751
SEED000_DISPATCHER = """#!/bin/sh
# Reduce the Accelerated Networking queues to 16, permanently (SAP on Azure network
# tuning blog, Red Hat procedure)
/sbin/ethtool -L enP30832s1 combined 16
/sbin/ethtool -L enP30833s2 combined 16
"""

# cloud-init's network config rendered for netplan on Azure (cloudinit/sources/helpers/azure
# + cloudinit/net/netplan.py): each synthetic NIC matched by driver and MAC, set-name
CLOUD_INIT_NETPLAN = """network:
    ethernets:
        eth0:
            dhcp4: true
            dhcp4-overrides:
                route-metric: 100
            dhcp6: false
            match:
                driver: hv_netvsc
                macaddress: {eth0}
            set-name: eth0
        eth1:
            dhcp4: true
            dhcp4-overrides:
                route-metric: 200
            dhcp6: false
            match:
                driver: hv_netvsc
                macaddress: {eth1}
            set-name: eth1
    version: 2
"""

# what netplan's generator writes from it (src/networkd.c write_link_file():
# append_match_section() Driver=, PermanentMACAddress=; [Link] Name=, WakeOnLan=off)
NETPLAN_LINK = """[Match]
Driver=hv_netvsc
PermanentMACAddress={mac}

[Link]
Name={name}
WakeOnLan=off
"""

VF_QUEUES_LINK = """# Accelerated Networking VFs: 16 queues (seed 000), matched by driver so the file follows
# the VF whatever name a redeploy gives it. The first matching .link file is the only one
# applied (systemd.link(5)), so it keeps the naming policy of systemd's 99-default.link.
[Match]
Driver=mlx5_core

[Link]
NamePolicy=keep kernel database onboard slot path
AlternativeNamesPolicy=database onboard slot path mac
MACAddressPolicy=none
CombinedChannels=16
"""


# What azure-vm-utils installs, written from what it is documented to do (SPEC §2): the
# Accelerated Networking VF (a mana, mlx4 or mlx5 device enslaved to the synthetic NIC,
# IFF_SLAVE 0x800 in its flags) is left alone by NetworkManager and systemd-networkd.
AZURE_UNMANAGED_RULE = (
    "# Accelerated Networking VFs are configured through their synthetic NIC: managers leave them alone\n"
    'ACTION!="remove", SUBSYSTEM=="net", DRIVERS=="mana|mlx4_core|mlx5_core", ATTR{flags}=="0x?[89ABCDEF]??", '
    'ENV{AZURE_UNMANAGED_SRIOV}="1", ENV{NM_UNMANAGED}="1", ENV{ID_NET_MANAGED_BY}="unmanaged"\n')
AZURE_UNMANAGED_NETWORK = "# the VFs azure-vm-utils' udev rule marks\n[Match]\nProperty=AZURE_UNMANAGED_SRIOV=1\n\n[Link]\nUnmanaged=yes\n"
# RHEL 9's /etc/NetworkManager/NetworkManager.conf sets nothing: two empty sections among comments
RHEL_NM_CONF = ("# Configuration file for NetworkManager; see NetworkManager.conf(5). Every setting is left at\n"
                "# its build default (plugins: keyfile, and ifcfg-rh on RHEL 9).\n\n[main]\n\n[logging]\n")


def packaged(name: str) -> str:
    with open(os.path.join(PACKAGED, name), encoding="utf-8") as f:
        return f.read()


def _remove(r: be.Root, rel: str) -> None:
    path = os.path.join(r.path, rel)
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.remove(path)


def _azure_base(name: str, kernel: str, os_release: str, hostname: str) -> be.Root:
    """build_examples' tuned Azure M host without its SUSE network stack (wicked, ifcfg,
    the VF queue rule): the distribution's own goes on top."""
    be.azure_m(name, rebooted=False, kernel=kernel, os_key="sles15sp4", master_queues=False, hostname=hostname)
    r = be.Root.__new__(be.Root)
    r.name, r.path = name, os.path.join(be.EXAMPLES, name)
    r.write("etc/os-release", os_release)
    for rel in ("etc/sysconfig/network", "etc/udev/rules.d/70-azure-an-queues.rules",
                "etc/systemd/system/multi-user.target.wants/wicked.service", "usr/lib/systemd/system/wicked.service",
                "proc/1187", "proc/1201"):
        _remove(r, rel)
    for pair in be.AZ_PAIRS:
        mac = MACS[pair["synth"]]
        for ifname, flags in ((pair["synth"], "0x1003"), (pair["vf"], "0x1803")):  # VF: IFF_SLAVE (0x800)
            r.value(f"sys/class/net/{ifname}/address", mac)
            r.value(f"sys/class/net/{ifname}/addr_assign_type", 0)
            r.value(f"sys/class/net/{ifname}/flags", flags)
    # azure-vm-utils: NM_UNMANAGED=1 (and ID_NET_MANAGED_BY=unmanaged) for every AN VF
    r.write("usr/lib/udev/rules.d/10-azure-unmanaged-sriov.rules", AZURE_UNMANAGED_RULE)
    return r


def azure_rhel9_sap() -> None:
    r = _azure_base("azure-rhel9-sap-nm-unmanaged", RHEL_KERNEL, RHEL94, "hanadb09")
    be.processes(r, {1187: "NetworkManager", 1250: "tuned"})
    be.install_units(r, ["NetworkManager.service", "NetworkManager-dispatcher.service"])
    r.write("usr/lib/systemd/system/tuned.service", packaged("tuned.service"))
    be.enable(r, "NetworkManager.service")
    be.enable(r, "tuned.service")
    r.write("etc/NetworkManager/NetworkManager.conf", RHEL_NM_CONF)
    r.write("etc/NetworkManager/dispatcher.d/set_combined_queues", SEED000_DISPATCHER, mode=0o751)
    r.write("usr/lib/tuned/sap-hana/tuned.conf", packaged("tuned_sap-hana_tuned.conf"))
    r.value("etc/tuned/active_profile", "sap-hana")


def azure_ubuntu2404() -> None:
    r = _azure_base("azure-ubuntu2404-netplan", UBUNTU_KERNEL, UBUNTU2404, "hanadb24")
    be.processes(r, {1187: "systemd-network"})
    r.write("usr/lib/systemd/network/01-azure-unmanaged-sriov.network", AZURE_UNMANAGED_NETWORK)
    r.write("etc/netplan/50-cloud-init.yaml", CLOUD_INIT_NETPLAN.format(**MACS), mode=0o600)
    for synth, mac in MACS.items():
        r.write(f"run/systemd/network/10-netplan-{synth}.link", NETPLAN_LINK.format(mac=mac, name=synth), mode=0o640)
    r.write("etc/systemd/network/60-azure-an-vf-queues.link", VF_QUEUES_LINK)


BUILDERS = {"azure-rhel9-sap-nm-unmanaged": azure_rhel9_sap, "azure-ubuntu2404-netplan": azure_ubuntu2404}


def main(argv: list[str]) -> int:
    for n in argv or list(BUILDERS):
        BUILDERS[n]()
        print(f"wrote {os.path.relpath(os.path.join(be.EXAMPLES, n))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
