#!/usr/bin/env python3
"""Write the udev engine's scenarios (issue 17): udev_* in nic_settings_persistent and
irq_affinity_persistent, and the NFS read-ahead predictions in udev_attr. Each scenario
states the systemd-udevd rule it exercises (tests/scenarios/README.md, "udev" section,
cites the source line). Uses the building blocks of build_scenarios.py.

    python3 tests/scenarios/build_udev_scenarios.py
"""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import build_scenarios as bs  # noqa: E402

NIC, NIC_CHECK = "nic_settings_persistent", "nic-settings-persistent"
IRQ, IRQ_CHECK = "irq_affinity_persistent", "nic-irq-affinity-persistent"
ATTR, ATTR_CHECK = "udev_attr", "nfs-readahead-persistent"
QUEUES = "etc/udev/rules.d/70-accelnet-queues.rules"
ETHTOOL_L = 'RUN+="/usr/sbin/ethtool -L $kernel combined 16"'
VF_RULE = f'ACTION=="add", SUBSYSTEM=="net", DRIVERS=="mlx5_core", {ETHTOOL_L}\n'
MASTER = bs.IFCFG_SUSE + "ETHTOOL_OPTIONS='-L eth0 combined 16'\n"
VMX_RUN = ('RUN+="/usr/sbin/ethtool -C $name rx-usecs 25", RUN+="/usr/sbin/ethtool -K $name lro off", '
           'RUN+="/usr/sbin/ethtool -G $name rx 512 rx-mini 0 tx 512"')
NFS_UTILS_RULE = ('SUBSYSTEM=="bdi", ACTION=="add", PROGRAM="/usr/libexec/nfsrahead %k", '
                  'ATTR{read_ahead_kb}="%c"\n')  # nfs-utils systemd/99-nfs.rules
SEED_RULE = bs.NFS_RULE


def write_files(r: bs.Root, files: dict[str, str | None]) -> bs.Root:
    """Each file with its text; None: a link to /dev/null (a mask)."""
    for rel, text in files.items():
        if text is None:
            r.symlink(rel, "/dev/null")
        else:
            r.write(rel, text)
    return r


def az(name: str, desc: str, rules: dict[str, str | None], *, master: bool = True, **meta) -> bs.Root:
    """Azure AN pair (eth0 + mlx5 VF enP1s1) with the given rules files; eth0 set by ifcfg."""
    r = bs.persist_az(name, desc, **meta)
    if master:
        r.write("etc/sysconfig/network/ifcfg-eth0", MASTER)
    return write_files(r, rules)


def _nic():
    az("udev_drivers_not_equal_matches_net_device.pass",
       'DRIVERS!="mlx5_core": udev tests the parent keys starting with the event device itself, and the VF\'s net '
       "device has no driver, so != holds there and the rule runs for enP1s1 (and eth0)",
       {QUEUES: VF_RULE.replace("DRIVERS==", "DRIVERS!=")}, master=False, objects={"enP1s1": "pass", "eth0": "pass"})
    az("udev_invalid_operator_line_dropped.fail",
       'KERNEL="enP*" (assignment operator on a match-only key): udev drops the whole line, so the VF is not set',
       {QUEUES: f'ACTION=="add", SUBSYSTEM=="net", KERNEL="enP*", {ETHTOOL_L}\n'}, objects={"enP1s1": "fail"})
    az("udev_invalid_key_line_dropped_not_error.fail",
       "one line with an unknown key (DRIVER_NAME) is dropped; the other lines still apply and nothing is an error",
       {QUEUES: f'ACTION=="add", SUBSYSTEM=="net", DRIVER_NAME=="mlx5_core", {ETHTOOL_L}\n'
                'ACTION=="add", SUBSYSTEM=="net", KERNEL=="eth0", RUN+="/usr/sbin/ethtool -L $kernel combined 16"\n'},
       master=False, objects={"enP1s1": "fail", "eth0": "pass"})
    az("udev_goto_missing_label_ignored.pass",
       'GOTO="accelnet_vf" has no LABEL of that name (the label is spelled accelnet-vf): udev ignores the GOTO and '
       "goes on with the next line, which sets the VF",
       {QUEUES: 'ACTION=="add", SUBSYSTEM=="net", GOTO="accelnet_vf"\n' + VF_RULE + 'LABEL="accelnet-vf"\n'},
       objects={"enP1s1": "pass"})
    az("udev_goto_skips_to_label.fail", "GOTO jumps over the VF line to its LABEL later in the same file",
       {QUEUES: 'ACTION=="add", SUBSYSTEM=="net", GOTO="accelnet_end"\n' + VF_RULE + 'LABEL="accelnet_end"\n'},
       objects={"enP1s1": "fail"})
    az("udev_label_in_other_file_not_found.pass",
       "a LABEL is looked up in the GOTO's own file only: the GOTO to a label of another file is ignored",
       {"etc/udev/rules.d/69-skip.rules": 'ACTION=="add", SUBSYSTEM=="net", GOTO="accelnet_end"\n',
        QUEUES: VF_RULE + 'LABEL="accelnet_end"\n'}, objects={"enP1s1": "pass"})
    az("udev_comment_inside_continuation.pass",
       "a comment line inside a backslash continuation is skipped and the rule goes on",
       {QUEUES: 'ACTION=="add", SUBSYSTEM=="net", \\\n# the VF of Accelerated Networking\n'
                f'  DRIVERS=="mlx5_core", \\\n  {ETHTOOL_L}\n'}, objects={"enP1s1": "pass"})
    az("udev_continued_line_too_long.fail",
       "a continued rule of 16384 bytes or more (UDEV_LINE_SIZE) is ignored as too long",
       {QUEUES: 'ACTION=="add", SUBSYSTEM=="net", \\\n' + f'  ENV{{X}}=="{"x" * 9000}", \\\n'
                + f'  ENV{{Y}}!="{"y" * 8000}", \\\n  DRIVERS=="mlx5_core", {ETHTOOL_L}\n'},
       objects={"enP1s1": "fail"})
    az("udev_rules_in_run_gone_at_boot.fail", "the rule exists only in /run/udev/rules.d, a tmpfs emptied at boot",
       {"run/udev/rules.d/70-accelnet-queues.rules": VF_RULE}, objects={"enP1s1": "fail"})
    az("udev_usr_local_lib_rules.pass", "/usr/local/lib/udev/rules.d is one of udev's rules directories",
       {"usr/local/lib/udev/rules.d/70-accelnet-queues.rules": VF_RULE}, objects={"enP1s1": "pass"})
    az("udev_hidden_file_ignored.fail", "udev skips rules files whose name starts with a dot",
       {"etc/udev/rules.d/.70-accelnet-queues.rules": VF_RULE}, objects={"enP1s1": "fail"})
    az("udev_not_rules_suffix_ignored.fail", "only *.rules files are read (a .rules.bak is not)",
       {"etc/udev/rules.d/70-accelnet-queues.rules.bak": VF_RULE}, objects={"enP1s1": "fail"})
    az("udev_empty_file_masks_vendor.fail",
       "an empty file of the same name in /etc masks the rule in /usr/lib (udev skips it as empty)",
       {"usr/lib/udev/rules.d/70-accelnet-queues.rules": VF_RULE, QUEUES: ""}, objects={"enP1s1": "fail"})
    az("udev_env_interface_substitution.pass",
       "ENV{ID_NET_DRIVER} and $env{INTERFACE} are the device's properties (net_driver builtin, uevent)",
       {QUEUES: 'ACTION=="add", SUBSYSTEM=="net", ENV{ID_NET_DRIVER}=="mlx5_core", '
                'RUN+="/usr/sbin/ethtool -L $env{INTERFACE} combined 16"\n'}, objects={"enP1s1": "pass"})
    az("udev_run_final_blocks_later_rules.fail",
       'RUN:= in an earlier file makes the program list final: the later RUN+= is not added',
       {"etc/udev/rules.d/60-final.rules": 'ACTION=="add", SUBSYSTEM=="net", DRIVERS=="mlx5_core", '
                                            'RUN:="/usr/bin/logger mlx5 VF added"\n', QUEUES: VF_RULE},
       objects={"enP1s1": "fail"})
    az("udev_run_minus_operator_line_dropped.fail", 'RUN-= is not an operator RUN takes: the line is dropped',
       {QUEUES: 'ACTION=="add", SUBSYSTEM=="net", DRIVERS=="mlx5_core", RUN-="/usr/bin/true", ' + ETHTOOL_L + "\n"},
       objects={"enP1s1": "fail"})
    az("udev_name_unset_before_net_setup_link.fail",
       "NAME== matches the name a NAME= assigned; for interfaces 80-net-setup-link.rules assigns it, so a rule in "
       "70-*.rules sees it unset", {QUEUES: f'ACTION=="add", SUBSYSTEM=="net", NAME=="enP1s1", {ETHTOOL_L}\n'},
       objects={"enP1s1": "fail"})
    az("udev_name_after_net_setup_link.pass", "the same NAME== rule in 90-*.rules, after 80-net-setup-link.rules",
       {"etc/udev/rules.d/90-accelnet-queues.rules":
        f'ACTION=="add", SUBSYSTEM=="net", NAME=="enP1s1", {ETHTOOL_L}\n'}, objects={"enP1s1": "pass"})
    az("udev_escaped_value.pass", 'an e"..." value takes C escapes (\\x20 is a blank)',
       {QUEUES: 'ACTION=="add", SUBSYSTEM=="net", DRIVERS=="mlx5_core", '
                'RUN+=e"/usr/sbin/ethtool\\x20-L $kernel combined 16"\n'}, objects={"enP1s1": "pass"})
    # VMware: the NIC's PCI function holds vendor/device; `device` of the net device is a link
    r = bs.vmx_nic_scn(NIC, "udev_attrs_device_through_pci_parent.pass", NIC_CHECK,
                       'ATTRS{vendor}=="0x15ad", ATTRS{device}=="0x07b0": the net device\'s `device` is a link (no '
                       "value), so ATTRS goes on to the VMXNET3 PCI function, which matches",
                       objects={"ens192": "pass"})
    bs.network_service(r, "NetworkManager.service")
    r.value("sys/devices/pci0000:00/0000:00:15.0/0000:0b:00.0/vendor", "0x15ad")
    r.value("sys/devices/pci0000:00/0000:00:15.0/0000:0b:00.0/device", "0x07b0")
    r.write("etc/udev/rules.d/70-vmxnet3-tuning.rules",
            f'ACTION=="add", SUBSYSTEM=="net", ATTRS{{vendor}}=="0x15ad", ATTRS{{device}}=="0x07b0", {VMX_RUN}\n')
    r = bs.vmx_nic_scn(NIC, "udev_attr_link_never_matches.fail", NIC_CHECK,
                       'ATTR{device}=="*" on the net device: `device` is a link, which has no value, so the token '
                       "fails whatever the pattern (a verdict, not an error)", objects={"ens192": "fail"})
    bs.network_service(r, "NetworkManager.service")
    r.write("etc/udev/rules.d/70-vmxnet3-tuning.rules",
            f'ACTION=="add", SUBSYSTEM=="net", ATTR{{device}}=="*", {VMX_RUN}\n')
    r = bs.vmx_nic_scn(NIC, "udev_attrs_driver_link_basename.pass", NIC_CHECK,
                       "ATTRS{driver}: the driver link's value is the basename of its target (vmxnet3)",
                       objects={"ens192": "pass"})
    bs.network_service(r, "NetworkManager.service")
    r.write("etc/udev/rules.d/70-vmxnet3-tuning.rules",
            f'ACTION=="add", SUBSYSTEM=="net", ATTRS{{driver}}=="vmxnet3", {VMX_RUN}\n')


def _irq():
    def scn(name, desc, rule, **meta):
        r = bs.Root(IRQ, name, IRQ_CHECK, desc, **meta)
        bs.azure_host(r)
        bs.an_pair(r, msi=range(24, 33))
        bs.network_service(r, "NetworkManager.service")
        r.write("etc/udev/rules.d/90-accelnet-irqs.rules", rule)
        return r
    pin = 'RUN+="/usr/local/sbin/set_irq_affinity_cpulist.sh 2-7 %k"'
    scn("udev_drivers_not_equal_pins_vf.pass", 'DRIVERS!="mlx5_core" holds at the VF\'s net device (no driver)',
        f'ACTION=="add", SUBSYSTEM=="net", DRIVERS!="mlx5_core", {pin}\n', objects={"enP1s1": "pass"})
    scn("udev_invalid_line_not_pinned.fail", "the pinning rule has KERNEL= (assignment) and udev drops it",
        f'ACTION=="add", SUBSYSTEM=="net", KERNEL="enP1s1", {pin}\n', objects={"enP1s1": "fail"})
    scn("udev_parent_keys_one_device.fail",
        'KERNELS=="enP1s1" and DRIVERS=="mlx5_core" hold at different devices (the net device, its PCI function): '
        "udev needs all parent keys at one device", f'ACTION=="add", SUBSYSTEM=="net", KERNELS=="enP1s1", '
        f'DRIVERS=="mlx5_core", {pin}\n', objects={"enP1s1": "fail"})


def _attr():
    def scn(name, desc, files: dict[str, str | None], kernel=bs.RHEL84_KERNEL, lines=None, **meta):
        r = bs.Root(ATTR, name, ATTR_CHECK, desc, **meta)
        bs.nfs_host(r, kernel=kernel, lines=lines)
        return write_files(r, files)
    vendor = "usr/lib/udev/rules.d/99-nfs.rules"
    scn("nfsrahead_nfs_conf.pass", "nfs-utils' 99-nfs.rules runs nfsrahead, which reads [nfsrahead] nfs=15380 "
        "from /etc/nfs.conf for the NFSv3 mount",
        {vendor: NFS_UTILS_RULE, "etc/nfs.conf": "[general]\n\n[nfsrahead]\nnfs=15380\n"})
    v4 = bs.nfs_line(fstype="nfs4", super_opts=bs.SUPER.replace("vers=3", "vers=4.1"))
    scn("nfsrahead_nfs4_only_v3_mounts.fail", "[nfsrahead] sets only nfs4=15380; the mount is NFSv3 (fstype nfs), "
        "so nfsrahead writes its default 128", {vendor: NFS_UTILS_RULE, "etc/nfs.conf": "[nfsrahead]\nnfs4=15380\n"})
    scn("nfsrahead_nfs4_mount.pass", "an NFSv4.1 mount (fstype nfs4) takes nfs4=", lines=[v4],
        files={vendor: NFS_UTILS_RULE, "etc/nfs.conf": "[nfsrahead]\nnfs=128\nnfs4=15380\n"})
    scn("nfsrahead_conf_d_later_wins.pass", "etc/nfs.conf.d/*.conf is read after etc/nfs.conf: its nfs= wins",
        {vendor: NFS_UTILS_RULE, "etc/nfs.conf": "[nfsrahead]\nnfs=128\n",
         "etc/nfs.conf.d/sas.conf": "[nfsrahead]\nnfs=15380\n"})
    scn("nfsrahead_default_key.pass", "nfsrahead falls back to [nfsrahead] default= when the fstype key is absent",
        {vendor: NFS_UTILS_RULE, "etc/nfs.conf": "[nfsrahead]\ndefault=15380\n"})
    scn("seed_rule_in_etc_hides_nfsrahead.pass", "seed 003's /etc/udev/rules.d/99-nfs.rules has the vendor file's "
        "name, so nfsrahead (nfs=128) never runs and the seed's 15380 applies",
        {vendor: NFS_UTILS_RULE, "etc/nfs.conf": "[nfsrahead]\nnfs=128\n", "etc/udev/rules.d/99-nfs.rules": SEED_RULE})
    scn("udev_attr_invalid_line_dropped.fail", 'the seed rule written with ACTION="add" (assignment): udev drops the '
        "line; the result names it", {"etc/udev/rules.d/99-nfs.rules": SEED_RULE.replace('ACTION=="add"', 'ACTION="add"')})
    scn("udev_attr_missing_attribute_never_matches.fail", 'ATTR{nosuch}!="x": a missing attribute fails the token even '
        "with !=", {"etc/udev/rules.d/99-nfs.rules": 'SUBSYSTEM=="bdi", ACTION=="add", ATTR{nosuch}!="x", '
                                                      'ATTR{read_ahead_kb}="15380"\n'})
    scn("udev_attr_run_dir_gone_at_boot.fail", "the rule only in /run/udev/rules.d is gone at the next boot",
        {"run/udev/rules.d/99-nfs.rules": SEED_RULE})
    scn("udev_attr_usr_local_lib.pass", "a rule in /usr/local/lib/udev/rules.d counts",
        {"usr/local/lib/udev/rules.d/99-nfs.rules": SEED_RULE})
    scn("udev_attr_hidden_file.fail", "a hidden .99-nfs.rules is not read", {"etc/udev/rules.d/.99-nfs.rules": SEED_RULE})
    scn("kernel_default_6x.fail", "no rule on Linux 6.1: the NFS bdi comes back at the kernel default 128 KiB", {},
        kernel="6.1.0-18-amd64")


def main() -> int:
    for fn in (_nic, _irq, _attr):
        fn()
    print("wrote the udev scenarios")
    return 0


if __name__ == "__main__":
    sys.exit(main())
