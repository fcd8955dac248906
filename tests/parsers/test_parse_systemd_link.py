from __future__ import annotations
import pytest

from tunewatch.parsers.systemd_link import MatchKey, parse_link_file


def test_match_lists_and_negation():
    link = parse_link_file("[Match]\nDriver=vmxnet3 e1000*\nOriginalName=!eth9\nOriginalName=!lo\n"
                           "[Link]\nRxBufferSize=512\n", "10.link")
    assert link.match == (MatchKey("Driver", ("vmxnet3", "e1000*")), MatchKey("OriginalName", ("!eth9", "!lo")))
    assert link.settings == {"rings.rx": "512"} and link.rejected == ()


def test_empty_assignment_resets_the_list():
    link = parse_link_file("[Match]\nDriver=a\nDriver=\nDriver=b\n", "x.link")
    assert link.match == (MatchKey("Driver", ("b",)),)


def test_no_match_section_matches_everything():
    assert parse_link_file("[Link]\nTxBufferSize=max\n", "x.link").match == ()


@pytest.mark.parametrize("line, setting", [("RxMiniBufferSize=0", None), ("CombinedChannels=0", None),
                                           ("CombinedChannels=4294967296", None), ("CombinedChannels=16", "16"),
                                           ("RxBufferSize=max", "max"), ("LargeReceiveOffload=no", "off"),
                                           ("LargeReceiveOffload=maybe", None), ("RxCoalesceSec=25us", "25"),
                                           ("RxCoalesceSec=25", "25000000"), ("RxCoalesceSec=1ms 5us", "1005"),
                                           ("RxCoalesceSec=soon", None)])
def test_values_as_systemd_parses_them(line, setting):
    link = parse_link_file(f"[Link]\n{line}\n", "x.link")
    if setting is None:
        assert link.settings == {} and link.rejected and link.rejected[0].startswith("line 2: ")
    else:
        assert list(link.settings.values()) == [setting] and link.rejected == ()
