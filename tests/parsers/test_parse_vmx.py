from __future__ import annotations
import pytest
from hypothesis import given, settings, strategies as st

from tunewatch.errors import ParseError
from tunewatch.parsers.vmx import VmxEntry, parse_vmx

VMX = """\
.encoding = "UTF-8"\r
config.version = "8"\r
virtualHW.version = "19"\r
# BIG-IP data plane NICs\r
ethernet1.present = "TRUE"\r
ethernet1.virtualDev = "vmxnet3"\r
ethernet1.ctxPerDev = 1\r
Ethernet1.PnicFeatures = “4”\r
sched.cpu.affinity = "2-31"\r
annotation = "say |22hi|22 |7C pipe"\r
ethernet1.virtualDev = "e1000e"\r
empty = ""\r
"""


def test_vmx():
    entries = parse_vmx(VMX, "vmware/bigip.vmx")
    assert entries[".encoding"] == VmxEntry(".encoding", "UTF-8", 1)
    assert entries["ethernet1.ctxperdev"] == VmxEntry("ethernet1.ctxPerDev", "1", 7)
    assert entries["ethernet1.pnicfeatures"] == VmxEntry("Ethernet1.PnicFeatures", "4", 8)
    assert entries["sched.cpu.affinity"].value == "2-31"
    assert entries["annotation"].value == 'say "hi" | pipe'
    assert entries["ethernet1.virtualdev"] == VmxEntry("ethernet1.virtualDev", "e1000e", 11)
    assert entries["empty"].value == ""


@pytest.mark.parametrize("line", ['ethernet1.present "TRUE"', 'ethernet1.present = "TRUE', '= "x"',
                                  'two words = "x"', 'key = "'])
def test_reject(line):
    with pytest.raises(ParseError) as e:
        parse_vmx('.encoding = "UTF-8"\n' + line + "\n", "v")
    assert e.value.line == 2


_key = st.from_regex(r"[A-Za-z][A-Za-z0-9_.:]{0,20}", fullmatch=True)
_value = st.text(st.characters(blacklist_characters="\n\r"), max_size=20)


def _quote(value):
    return '"' + value.replace("|", "|7C").replace('"', "|22") + '"'


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_key, _value, st.sampled_from([" = ", "=", "  =\t"])), max_size=8))
def test_generated_round_trip(items):
    text = "".join(f"{k}{eq}{_quote(v)}\n" for k, v, eq in items)
    want = {}
    for i, (k, v, _eq) in enumerate(items):
        want[k.lower()] = VmxEntry(k, v, i + 1)
    assert parse_vmx(text, "v") == want
