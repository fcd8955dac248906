"""Every parser, fed any text, returns a value or raises ParseError: nothing else escapes.

Inputs are arbitrary text and near-valid text: lines of a real-looking sample, cut,
truncated, spliced with noise characters, joined with LF or CRLF.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from tunewatch.errors import ParseError
from tunewatch.parsers.cpulist import parse_cpulist
from tunewatch.parsers.esxcli import parse_esxcli
from tunewatch.parsers.ethtool_args import find_ethtool_commands, parse_ethtool_options
from tunewatch.parsers.fstab import parse_fstab
from tunewatch.parsers.ini import parse_ini
from tunewatch.parsers.interrupts import parse_interrupts
from tunewatch.parsers.modprobe import parse_modprobe_conf
from tunewatch.parsers.mountinfo import parse_mountinfo
from tunewatch.parsers.proc_stat import parse_btime
from tunewatch.parsers.shellvars import parse_shell_assignments
from tunewatch.parsers.sysctl_conf import parse_sysctl_conf, sysctl_key_to_path
from tunewatch.parsers.udev_rules import parse_udev_rules
from tunewatch.parsers.vmx import parse_vmx

SAMPLES = {
    "cpulist": (lambda t: parse_cpulist(t, "s"), ["0-3,8,10-11", "0-7:2", "0-1023:2/256", "5", ""]),
    "interrupts": (lambda t: parse_interrupts(t, "s"), [
        "           CPU0       CPU1       CPU2       CPU3",
        " 24:    1064591          0          0          0  Hyper-V PCIe MSI 134250496-edge      mlx5_comp0@pci:0002:00:02.0",
        " 16:          0          0          0          0   IO-APIC  16-fasteoi   ehci_hcd:usb1, i801_smbus",
        " 56:      15602          0   PCI-MSI 1572864-edge      eth0-rxtx-0",
        "NMI:          0          0          0          0   Non-maskable interrupts", "ERR:          0"]),
    "mountinfo": (lambda t: parse_mountinfo(t, "s"), [
        "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue",
        "123 28 0:53 / /sas\\040data rw,noatime shared:75 - nfs 10.0.0.4:/sasvol rw,vers=3,nconnect=8,hard"]),
    "fstab": (lambda t: parse_fstab(t, "s"), [
        "# comment", "UUID=0a34 / xfs defaults 0 1",
        "10.0.0.4:/sasvol /sas\\040data nfs rw,bg,hard,tcp,nfsvers=3,_netdev 0 0", "tmpfs /tmp tmpfs size=2g"]),
    "sysctl": (lambda t: parse_sysctl_conf(t, "s"), [
        "# c", "; c", "net.core.rmem_max = 16777216", "-net.ipv4.conf.eth9.rp_filter=0", "net/ipv4/ip_forward = 1"]),
    "sysctl_path": (sysctl_key_to_path, ["vm.dirty_bytes", "net/ipv4/conf/eth0.100/rp_filter", "net.a/b.c"]),
    "modprobe": (lambda t: parse_modprobe_conf(t, "s"), [
        "options sunrpc tcp_slot_table_entries=128", "options mlx4-core a=1 \\", "  b=\"x y\" flag", "blacklist x",
        "# options"]),
    "ini": (lambda t: parse_ini(t, "s"), [
        "[main]", "include=throughput-performance", "[sysctl]", "vm.dirty_ratio = 40", "  continued",
        "x = ${f:calc_isolated_cores:2}", "OriginalName=eth* \\", "; c"]),
    "shellvars": (lambda t: parse_shell_assignments(t, "s"), [
        "ETHTOOL_OPTIONS=’-L eth0 combined 16’", "BOOTPROTO='static'", 'NAME="SLES \\"x\\""', "export A=b c",
        "B=“x y”", "if [ -f x ]; then", "fi"]),
    "udev": (lambda t: parse_udev_rules(t, "s"), [
        'SUBSYSTEM=="bdi", ACTION=="add", PROGRAM="/bin/awk -v bdi=$kernel \'{exit}\'", ATTR{read_ahead_kb}="15380"',
        'ACTION=="add", KERNEL=="eth*", \\', '  RUN+="/sbin/ethtool -G $name rx 8192"', 'NAME=e"a\\x41\\"b"', "# c"]),
    "ethtool_options": (lambda t: parse_ethtool_options(t, "eth0", "s"), [
        "-K ${DEVICE} lro off; -G $DEVICE rx 4096", "-L combined 16", "autoneg off speed 1000", "-C eth0 rx-usec 25"]),
    "ethtool_scan": (lambda t: find_ethtool_commands(t, "s"), [
        "ethtool -G eth0 rx 4096 && /sbin/ethtool -K eth0 lro off || true",
        "ExecStart=-/bin/sh -c \"ethtool -K $IFACE gro off; ethtool -L %k combined 4\"",
        "./ethtool -L $1 combined 4 >/dev/null 2>&1", "ethtool -G eth2 \\", "  rx 1024", "# ethtool -K x lro on"]),
    "proc_stat": (parse_btime, ["cpu  1093 0 1376", "btime 1763885062", "processes 1772"]),
    "vmx": (lambda t: parse_vmx(t, "s"), [
        '.encoding = "UTF-8"', "ethernet1.ctxPerDev = 1", "sched.cpu.affinity = “2-31”", 'a = "x|22y"', "# c"]),
    "esxcli": (lambda t: parse_esxcli(t, "s"), [
        "   Path: /Power/CpuPolicy", "   Type: string", "   Int Value: 0", "   String Value: High Performance",
        "   String Value: ", "", "   CPU Packages: 2", "   Hyperthreading Active: false", "[root@esx:~] esxcli"]),
}

NOISE = st.text(st.sampled_from(list(" \t\r,=:;#-/\\\"'{}$%0123456789’‘“”\x00\x0b\x0c\x85\u2028é٣²")) | st.characters(),
                max_size=4)


@st.composite
def near_valid(draw, lines):
    out = []
    for _ in range(draw(st.integers(0, 8))):
        line = draw(st.sampled_from(lines))
        i = draw(st.integers(0, len(line)))
        j = draw(st.integers(i, len(line)))
        action = draw(st.sampled_from(["keep", "keep", "cut", "truncate", "insert", "replace"]))
        if action == "cut":
            line = line[:i] + line[j:]
        elif action == "truncate":
            line = line[:i]
        elif action == "insert":
            line = line[:i] + draw(NOISE) + line[i:]
        elif action == "replace":
            line = line[:i] + draw(NOISE) + line[j:]
        out.append(line)
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    return eol.join(out) + draw(st.sampled_from(["", eol]))


def _total(parse, text):
    try:
        parse(text)
    except ParseError:
        pass


@pytest.mark.parametrize("name", sorted(SAMPLES))
@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_any_text(name, data):
    _total(SAMPLES[name][0], data.draw(st.text(), label="text"))


@pytest.mark.parametrize("name", sorted(SAMPLES))
@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_near_valid_text(name, data):
    parse, lines = SAMPLES[name]
    _total(parse, data.draw(near_valid(lines), label="text"))


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_samples_parse(name):
    parse, lines = SAMPLES[name]
    if name in ("cpulist", "sysctl_path"):
        for line in lines:
            parse(line)
    else:
        parse("\n".join(lines))
