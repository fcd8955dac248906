"""systemd .link files (systemd.link(5)): the [Match] conditions and the ethtool settings
of [Link], in ethtool's JSON naming, with values checked the way systemd-udevd parses them.

[Match]: keys are ANDed; each key holds a whitespace-separated list whose items are ORed
(shell globs for names, drivers, paths, types; exact hardware addresses); an assignment
starting with `!` makes its items negative: as systemd's `net_condition_test_strv()`, a
negative item that matches fails the key, and the key needs one positive item to match
when it has any. A key given several times extends its list; an empty value resets it.
"When a link file does not contain valid settings in [Match] section, then the file will
match all interfaces and systemd-udevd warns about that."

[Link] values systemd refuses are never applied: ring sizes and channel counts must be
"max" or 1..4294967295 (`config_parse_ring_buffer_or_channel`: `k < 1` is "Invalid ...
ignoring"), so `RxMiniBufferSize=0` does nothing; booleans are systemd booleans; the
coalesce times are time spans (`RxCoalesceSec=25` is 25 seconds, `25us` 25 microseconds).
"""

from __future__ import annotations

from .._lazyre import lazy
from .._record import FrozenRecord
from .ini import parse_ini_items

MATCH_KEYS = ("MACAddress", "PermanentMACAddress", "Path", "Driver", "Type", "Kind", "OriginalName", "Property",
              "Host", "Virtualization", "KernelCommandLine", "KernelVersion", "Architecture", "Firmware",
              "Credential")
RINGS_CHANNELS = {"RxChannels": "channels.rx", "TxChannels": "channels.tx", "OtherChannels": "channels.other",
                  "CombinedChannels": "channels.combined", "RxBufferSize": "rings.rx",
                  "RxMiniBufferSize": "rings.rx-mini", "RxJumboBufferSize": "rings.rx-jumbo",
                  "TxBufferSize": "rings.tx"}
FEATURES = {"LargeReceiveOffload": "features.large-receive-offload",
            "GenericReceiveOffload": "features.generic-receive-offload",
            "TCPSegmentationOffload": "features.tcp-segmentation-offload",
            "GenericSegmentationOffload": "features.generic-segmentation-offload",
            "ReceiveChecksumOffload": "features.rx-checksumming", "TransmitChecksumOffload": "features.tx-checksumming",
            "UseAdaptiveRxCoalesce": "coalesce.adaptive-rx", "UseAdaptiveTxCoalesce": "coalesce.adaptive-tx"}
COALESCE_SEC = {"RxCoalesceSec": "coalesce.rx-usecs", "TxCoalesceSec": "coalesce.tx-usecs",
                "RxCoalesceIrqSec": "coalesce.rx-usecs-irq", "TxCoalesceIrqSec": "coalesce.tx-usecs-irq"}
_TRUE = {"1", "yes", "y", "true", "t", "on"}
_FALSE = {"0", "no", "n", "false", "f", "off"}
# systemd's parse_sec(): a bare number is seconds
_UNITS = {"": 1_000_000, "s": 1_000_000, "sec": 1_000_000, "second": 1_000_000, "seconds": 1_000_000,
          "ms": 1000, "msec": 1000, "us": 1, "usec": 1, "µs": 1, "μs": 1, "min": 60_000_000, "m": 60_000_000}
_SPAN = lazy(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zµμ]*)\s*")


class MatchKey(FrozenRecord):
    __slots__ = ("key", "values")
    key: str
    values: tuple[str, ...]  # negative items keep their "!" prefix

    def __init__(self, key: str, values: tuple[str, ...]):
        self.key = key
        self.values = values


class LinkFile(FrozenRecord):
    __slots__ = ("source", "match", "settings", "rejected")
    source: str
    match: tuple[MatchKey, ...]  # empty: matches every interface (systemd warns)
    settings: dict[str, str]
    rejected: tuple[str, ...]  # "line N: Key=value: why systemd ignores it"

    def __init__(self, source: str, match: tuple[MatchKey, ...], settings: dict[str, str], rejected: tuple[str, ...]):
        self.source = source
        self.match = match
        self.settings = settings
        self.rejected = rejected


def _usec(value: str) -> int | None:
    total, pos = 0, 0
    while pos < len(value):
        m = _SPAN.match(value, pos)
        if not m or m.end() == pos or m.group(2) not in _UNITS:
            return None
        total += int(float(m.group(1)) * _UNITS[m.group(2)])
        pos = m.end()
    return total if value.strip() else None


def _setting(key: str, value: str) -> tuple[str | None, str | None]:
    """(normalised value, why it is ignored)."""
    if key in RINGS_CHANNELS:
        if value == "max":
            return "max", None
        if value.isdigit() and 1 <= int(value) <= 0xFFFFFFFF:
            return str(int(value)), None
        return None, "systemd accepts only \"max\" or 1..4294967295 here and ignores the assignment"
    if key in FEATURES:
        low = value.lower()
        if low in _TRUE or low in _FALSE:
            return ("on" if low in _TRUE else "off"), None
        return None, "not a boolean; systemd ignores the assignment"
    usec = _usec(value)
    if usec is None or usec > 0xFFFFFFFF:
        return None, "not a time span systemd accepts (in microseconds up to 4294967295)"
    return str(usec), None


def parse_link_file(text: str, source: str) -> LinkFile:
    match: dict[str, list[str]] = {}
    settings: dict[str, str] = {}
    rejected: list[str] = []
    for section, key, value, line in parse_ini_items(text, source):
        if section == "Match" and key in MATCH_KEYS:
            if not value:
                match.pop(key, None)
                continue
            invert = value.startswith("!")
            words = value[1:].split() if invert else value.split()
            match.setdefault(key, []).extend("!" + w if invert else w for w in words)
        elif section == "Link" and key in {**RINGS_CHANNELS, **FEATURES, **COALESCE_SEC}:
            name = {**RINGS_CHANNELS, **FEATURES, **COALESCE_SEC}[key]
            norm, why = _setting(key, value)
            if why:
                rejected.append(f"line {line}: {key}={value}: {why}")
                settings.pop(name, None)
            else:
                settings[name] = norm  # type: ignore[assignment]
    keys = tuple(MatchKey(k, tuple(v)) for k, v in match.items() if v)
    return LinkFile(source, keys, settings, tuple(rejected))
