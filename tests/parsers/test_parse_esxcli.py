from __future__ import annotations
import pytest

from tunewatch.errors import ParseError
from tunewatch.parsers.esxcli import parse_esxcli

ADVANCED = """\
[root@esx01:~] esxcli system settings advanced list -o /Net/NetNetqRxQueueFeatPairEnable
   Path: /Net/NetNetqRxQueueFeatPairEnable
   Type: integer
   Int Value: 0
   Default Int Value: 1
   Min Value: 0
   Max Value: 1
   String Value: 
   Default String Value: 
   Valid Characters: 
   Description: Enable/Disable pairing of tx and rx queues (default: enabled)

   Path: /Power/CpuPolicy
   Type: string
   Int Value: 0
   Default Int Value: 0
   Min Value: 0
   Max Value: 0
   String Value: High Performance
   Default String Value: Balanced
   Valid Characters: *
   Description: CPU power management policy: High Performance, Balanced, Low Power, Custom
"""

CPU = """\
   CPU Packages: 2\r
   CPU Cores: 32\r
   CPU Threads: 32\r
   Hyperthreading Active: false\r
   Hyperthreading Supported: true\r
   Hyperthreading Enabled: false\r
   HV Support: 3\r
   HV Replay Capable: false\r
   HV Replay Disabled Reasons: Incompatible CPU\r
"""


def test_advanced_two_records():
    out = parse_esxcli(ADVANCED, "vmware/esxcli/advanced.txt")
    assert out.kind == "advanced" and len(out.records) == 2
    netq, power = out.records
    assert netq["Path"] == "/Net/NetNetqRxQueueFeatPairEnable" and netq["Value"] == "0"
    assert netq["Default Int Value"] == "1" and netq["String Value"] == ""
    assert netq["Description"] == "Enable/Disable pairing of tx and rx queues (default: enabled)"
    assert power["Value"] == "High Performance" and power["Default String Value"] == "Balanced"


def test_cpu_global():
    out = parse_esxcli(CPU, "vmware/esxcli/cpu.txt")
    assert out.kind == "cpu_global"
    [record] = out.records
    assert record["Hyperthreading Active"] == "false" and record["CPU Packages"] == "2"
    assert record["HV Replay Disabled Reasons"] == "Incompatible CPU"


def test_unknown():
    out = parse_esxcli("   Name: vmnic0\n   Driver: nmlx5_core\n\n   Name: vmnic1\n   Driver: ixgben\n", "x")
    assert out.kind == "unknown" and [r["Name"] for r in out.records] == ["vmnic0", "vmnic1"]


@pytest.mark.parametrize("text", ["", "\n\n", "no colon here\n", "http://example/x\n", "[root@esx:~] esxcli\n"])
def test_reject(text):
    with pytest.raises(ParseError):
        parse_esxcli(text, "x")
