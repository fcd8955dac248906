"""Read one interface's NIC driver state from the running kernel (docs/snapshot-contract.md).

On a live host `ethtool/<if>.json` is not a file: this module asks the kernel through the
legacy SIOCETHTOOL ioctl, the interface every kernel since 2.6 has, and returns the dict
that `collect` writes into a snapshot.  No shelling out to the ethtool CLI (it may be
absent, and parsing its text is what snapshots exist to avoid) and no third-party code:
the C structs of <linux/ethtool.h> are packed by hand with `struct`.

The ioctl acts on the network namespace of the socket, i.e. of the calling process.
"""

from __future__ import annotations

import array
import errno
import fcntl
import socket
import struct

from tunewatch.errors import FactError

SIOCETHTOOL = 0x8946
ETHTOOL_GDRVINFO = 0x03
ETHTOOL_GCOALESCE = 0x0E
ETHTOOL_GRINGPARAM = 0x10
ETHTOOL_GSTRINGS = 0x1B
ETHTOOL_GSSET_INFO = 0x37
ETHTOOL_GFEATURES = 0x3A
ETHTOOL_GCHANNELS = 0x3C
ETH_SS_FEATURES = 4
ETH_GSTRING_LEN = 32
IFNAMSIZ = 16

# struct ifreq is the 16-byte name and a union whose largest member (struct ifmap) makes it
# 24 bytes on 64-bit; ifr_data, the pointer to our ethtool struct, is the union's start.
_IFREQ = struct.Struct(f"@{IFNAMSIZ}sP")  # native: P is a C pointer
_IFREQ_SIZE = 40 if struct.calcsize("P") == 8 else 32

# Errors that mean "this driver does not implement this query": the section is absent.
_NOT_SUPPORTED = {errno.EOPNOTSUPP, errno.ENOTSUP, errno.EINVAL}

# Field names below are ethtool's own CLI names (as `ethtool -l/-g/-c` print them), in the
# order the u32 fields follow `cmd` in the kernel struct.
_CHANNELS = ("rx-max", "tx-max", "other-max", "combined-max", "rx", "tx", "other", "combined")
_RINGS = ("rx-max", "rx-mini-max", "rx-jumbo-max", "tx-max", "rx", "rx-mini", "rx-jumbo", "tx")
_COALESCE = (
    "rx-usecs", "rx-frames", "rx-usecs-irq", "rx-frames-irq",
    "tx-usecs", "tx-frames", "tx-usecs-irq", "tx-frames-irq",
    "stats-block-usecs", "adaptive-rx", "adaptive-tx",
    "pkt-rate-low", "rx-usecs-low", "rx-frame-low", "tx-usecs-low", "tx-frame-low",
    "pkt-rate-high", "rx-usecs-high", "rx-frame-high", "tx-usecs-high", "tx-frame-high",
    "sample-interval",
)  # fmt: skip
_BOOL_COALESCE = {"adaptive-rx", "adaptive-tx"}

# struct ethtool_drvinfo: cmd, driver[32], version[32], fw_version[32], bus_info[32],
# erom_version[32], reserved2[12], then five u32 counters.
_DRVINFO = struct.Struct("=I32s32s32s32s32s12s5I")

# ethtool's legacy offload flags (off_flag_def in ethtool's common.c): `ethtool -k` prints
# the long name in place of the kernel feature(s) matching the pattern ("*" matches any
# run of characters).  A flag matching exactly one feature is shown only under its long
# name; one matching several is shown as the OR of them, followed by each feature under
# its kernel name.  Kernel features matching no flag are shown under their kernel name.
_LEGACY_FLAGS = (
    ("rx-checksumming", "rx-checksum"),
    ("tx-checksumming", "tx-checksum-*"),
    ("scatter-gather", "tx-scatter-gather*"),
    ("tcp-segmentation-offload", "tx-tcp*-segmentation"),
    ("udp-fragmentation-offload", "tx-udp-fragmentation"),
    ("generic-segmentation-offload", "tx-generic-segmentation"),
    ("generic-receive-offload", "rx-gro"),
    ("large-receive-offload", "rx-lro"),
    ("rx-vlan-offload", "rx-vlan-hw-parse"),
    ("tx-vlan-offload", "tx-vlan-hw-insert"),
    ("ntuple-filters", "rx-ntuple-filter"),
    ("receive-hashing", "rx-hashing"),
)
# UFO was removed from the kernel in 4.14; ethtool stopped printing it rather than show a
# permanent "off", so it appears only if an old kernel still has the feature.
_UFO = "udp-fragmentation-offload"


class EthtoolUnavailable(FactError):
    """The interface does not exist, or the ethtool ioctl cannot be made at all."""


def _pattern_match(name: str, pattern: str) -> bool:
    """ethtool's flag_pattern_match: at most one "*", which may match the empty string."""
    head, star, tail = pattern.partition("*")
    if not star:
        return name == pattern
    return len(name) >= len(head) + len(tail) and name.startswith(head) and name.endswith(tail)


def _cstr(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


class _Ethtool:
    """One interface's SIOCETHTOOL channel: a datagram socket plus the packed ifreq."""

    def __init__(self, ifname: str, sock: socket.socket):
        name = ifname.encode()
        # The kernel would truncate a longer name and might then answer for another device.
        if not name or len(name) >= IFNAMSIZ or b"\0" in name:
            raise EthtoolUnavailable(f"{ifname!r}: not a valid interface name")
        self.ifname, self._name, self._sock = ifname, name, sock

    def call(self, payload: bytes) -> bytes | None:
        """Run one ethtool command; its struct is `payload`, the kernel's answer is returned.

        None means the driver does not support the command.  The data must live in a buffer
        whose address we can hand over, hence array (bytes objects are immutable).
        """
        buf = array.array("B", payload)
        ifreq = _IFREQ.pack(self._name, buf.buffer_info()[0]).ljust(_IFREQ_SIZE, b"\0")
        try:
            fcntl.ioctl(self._sock.fileno(), SIOCETHTOOL, ifreq)
        except OSError as exc:
            if exc.errno in _NOT_SUPPORTED:
                return None
            why = errno.errorcode.get(exc.errno or 0, str(exc.errno))
            cmd = struct.unpack_from("=I", payload)[0]
            raise EthtoolUnavailable(f"{self.ifname}: ethtool command {cmd:#x}: {why}") from exc
        return buf.tobytes()

    def u32s(self, cmd: int, names: tuple[str, ...]) -> dict[str, int] | None:
        """Commands whose struct is `u32 cmd` followed by len(names) u32 fields."""
        fmt = f"={1 + len(names)}I"
        out = self.call(struct.pack(fmt, cmd, *[0] * len(names)))
        return None if out is None else dict(zip(names, struct.unpack(fmt, out)[1:]))


def _driver(eth: _Ethtool) -> dict | None:
    out = eth.call(_DRVINFO.pack(ETHTOOL_GDRVINFO, *[b""] * 6, *[0] * 5))
    if out is None:
        return None
    _, drv, ver, fw, bus = _DRVINFO.unpack(out)[:5]
    return {"driver": _cstr(drv), "version": _cstr(ver),
            "firmware-version": _cstr(fw), "bus-info": _cstr(bus)}  # fmt: skip


def _coalesce(eth: _Ethtool) -> dict | None:
    values = eth.u32s(ETHTOOL_GCOALESCE, _COALESCE)
    if values is not None:
        for key in _BOOL_COALESCE:
            values[key] = bool(values[key])
    return values


def _feature_names(eth: _Ethtool) -> list[str] | None:
    # struct ethtool_sset_info: cmd, reserved, u64 sset_mask, then one u32 per set in the
    # mask.  The kernel clears the mask bit of a set it does not know.
    out = eth.call(struct.pack("=IIQI", ETHTOOL_GSSET_INFO, 0, 1 << ETH_SS_FEATURES, 0))
    if out is None:
        return None
    _, _, mask, count = struct.unpack("=IIQI", out)
    if not mask & (1 << ETH_SS_FEATURES):
        return None
    # struct ethtool_gstrings: cmd, string_set, len, then len strings of 32 bytes each.  The
    # kernel writes as many strings as the set has, not as many as we ask for; the feature
    # set's size is fixed per kernel build, so the count just read is safe to size by.
    head = struct.pack("=III", ETHTOOL_GSTRINGS, ETH_SS_FEATURES, count)
    out = eth.call(head + bytes(count * ETH_GSTRING_LEN))
    if out is None:
        return None
    (count,) = struct.unpack_from("=I", out, 8)  # the kernel may report fewer than asked
    return [_cstr(out[12 + i * ETH_GSTRING_LEN : 12 + (i + 1) * ETH_GSTRING_LEN])
            for i in range(count)]  # fmt: skip


def _active_features(eth: _Ethtool, count: int) -> list[bool] | None:
    # struct ethtool_gfeatures: cmd, size (number of blocks), then per 32 features a block
    # of available, requested, active, never_changed; `ethtool -k` shows "active".
    words = (count + 31) // 32
    out = eth.call(struct.pack(f"=II{4 * words}I", ETHTOOL_GFEATURES, words, *[0] * 4 * words))
    if out is None:
        return None
    blocks = struct.unpack_from(f"={4 * words}I", out, 8)
    active = blocks[2::4]
    return [bool(active[i // 32] >> (i % 32) & 1) for i in range(count)]


def _features(eth: _Ethtool) -> dict[str, bool] | None:
    names = _feature_names(eth)
    active = _active_features(eth, len(names)) if names is not None else None
    if names is None or active is None:
        return None
    # Same grouping as ethtool's dump_features(), so keys equal what `ethtool -k` prints.
    flag_of: dict[int, int] = {}
    for i, name in enumerate(names):
        for f, (_, pattern) in enumerate(_LEGACY_FLAGS):
            if name and _pattern_match(name, pattern):
                flag_of[i] = f
                break
    result: dict[str, bool] = {}
    for f, (long_name, _) in enumerate(_LEGACY_FLAGS):
        members = [i for i in sorted(flag_of) if flag_of[i] == f]
        if len(members) == 1:
            result[long_name] = active[members[0]]
            continue
        if not members and long_name == _UFO:
            continue
        result[long_name] = any(active[i] for i in members)
        for i in members:
            result[names[i]] = active[i]
    for i, name in enumerate(names):
        if name and i not in flag_of:
            result[name] = active[i]
    return result


def read_interface(ifname: str) -> dict:
    """Return the snapshot-shaped dict for one interface (docs/snapshot-contract.md).

    Keys: "driver", "channels", "rings", "coalesce", "features", each present only when
    the driver answers the query (EOPNOTSUPP/EINVAL leave it out).  Raises
    EthtoolUnavailable if the interface does not exist or the kernel refuses the ioctl
    for another reason (e.g. ENODEV, EPERM).
    """
    try:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    except OSError:
        # A kernel without IPv4 still routes SIOCETHTOOL through any socket family.
        try:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        except OSError as exc:
            raise EthtoolUnavailable(f"{ifname}: no socket for the ethtool ioctl: {exc}") from exc
    with sock:
        eth = _Ethtool(ifname, sock)
        sections = {
            "driver": _driver(eth),
            "channels": eth.u32s(ETHTOOL_GCHANNELS, _CHANNELS),
            "rings": eth.u32s(ETHTOOL_GRINGPARAM, _RINGS),
            "coalesce": _coalesce(eth),
            "features": _features(eth),
        }
    return {key: value for key, value in sections.items() if value is not None}
