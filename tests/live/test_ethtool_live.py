"""The live ethtool reader against the kernel, cross-checked with the ethtool CLI.

The CLI (ethtool >= 5.6 talks netlink) and the reader (SIOCETHTOOL ioctl) take different
paths into the kernel, so agreement between them checks our struct layouts and the
feature naming.  The veth test runs in a throw-away network namespace so that changing
channels and offloads touches nothing of the host.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import tunewatch
from tunewatch.facts import ethtool_live
from tunewatch.facts.ethtool_live import EthtoolUnavailable, read_interface

CLI_ENV = {**os.environ, "LC_ALL": "C"}
needs_ethtool = pytest.mark.skipif(shutil.which("ethtool") is None, reason="ethtool CLI missing")


# --- parsing the CLI's text --------------------------------------------------------------


def _num(text: str) -> int | None:
    text = text.strip()
    return None if text == "n/a" else int(text)


def parse_two_blocks(text: str, labels: dict[str, str]) -> dict[str, int | None]:
    """`ethtool -l` / `-g`: "Pre-set maximums:" then "Current hardware settings:" blocks
    of "Label: value" lines; maxima get the "-max" suffix, as in the snapshot."""
    out: dict[str, int | None] = {}
    suffix = None
    for line in text.splitlines():
        if line.startswith("Pre-set maximums"):
            suffix = "-max"
        elif line.startswith("Current hardware settings"):
            suffix = ""
        elif suffix is not None and ":" in line:
            label, _, value = line.partition(":")
            if label.strip() in labels:
                out[labels[label.strip()] + suffix] = _num(value)
    return out


def parse_coalesce(text: str) -> dict[str, object]:
    out: dict[str, object] = {}
    for line in text.splitlines():
        if line.startswith("Adaptive RX:"):  # "Adaptive RX: off  TX: n/a"
            rx, tx = line.split()[2], line.split()[4]
            out["adaptive-rx"] = None if rx == "n/a" else rx == "on"
            out["adaptive-tx"] = None if tx == "n/a" else tx == "on"
        else:  # "rx-usecs: 25"; newer CLIs print more keys than the ioctl struct has
            key, _, value = line.partition(": ")
            if key in ethtool_live._COALESCE:
                out[key] = _num(value)
    return out


def parse_features(text: str) -> dict[str, bool]:
    out = {}
    for line in text.splitlines()[1:]:  # skip "Features for <if>:"
        name, _, state = line.strip().partition(": ")
        out[name] = state.split()[0] == "on"
    return out


def parse_driver(text: str) -> dict[str, str]:
    fields = dict(line.partition(":")[::2] for line in text.splitlines())
    keys = ("driver", "version", "firmware-version", "bus-info")
    return {key: fields[key].strip() for key in keys}


# --- comparing the reader's dict with the CLI --------------------------------------------

CHANNEL_LABELS = {"RX": "rx", "TX": "tx", "Other": "other", "Combined": "combined"}
RING_LABELS = {"RX": "rx", "RX Mini": "rx-mini", "RX Jumbo": "rx-jumbo", "TX": "tx"}


def assert_matches_cli(result: dict, ethtool) -> None:
    """`ethtool(*args)` runs the CLI for the same interface; every section must agree,
    and a section the CLI calls "not supported" must be absent from `result`."""
    checks = {
        "driver": ("-i", parse_driver),
        "channels": ("-l", lambda t: parse_two_blocks(t, CHANNEL_LABELS)),
        "rings": ("-g", lambda t: parse_two_blocks(t, RING_LABELS)),
        "coalesce": ("-c", parse_coalesce),
        "features": ("-k", parse_features),
    }
    for section, (option, parse) in checks.items():
        proc = ethtool(option)
        if proc.returncode != 0:
            assert "not supported" in proc.stderr.lower(), (option, proc.stderr)
            assert section not in result, f"CLI says {option} is unsupported, reader has {section}"
            continue
        assert section in result, f"`ethtool {option}` works but reader has no {section}"
        cli, ours = parse(proc.stdout), result[section]
        if section in ("channels", "rings"):
            # Over netlink the kernel omits a queue type whose maximum is 0: "n/a".
            assert {k: v or 0 for k, v in cli.items()} == ours, section
        elif section == "coalesce":
            _assert_coalesce(cli, ours)
        else:
            assert cli == ours, section


def _assert_coalesce(cli: dict, ours: dict) -> None:
    assert set(ours) == set(ethtool_live._COALESCE)
    for key, value in ours.items():
        assert key in cli, f"reader key {key!r} is not an ethtool CLI name"
        if cli[key] is None:
            continue  # "n/a": the driver does not declare the parameter; ioctl gives 0/junk
        # With adaptive coalescing the driver may retune usecs/frames between two reads.
        if key[:3] in ("rx-", "tx-") and ours[f"adaptive-{key[:2]}"]:
            continue
        assert cli[key] == value, key


# --- the tests ---------------------------------------------------------------------------


def run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, env=CLI_ENV, check=check)


@pytest.fixture
def netns():
    if os.geteuid() != 0:
        pytest.skip("needs root to create a network namespace")
    if shutil.which("ethtool") is None:
        pytest.skip("ethtool CLI missing")
    if shutil.which("ip") is None or run("ip", "netns", "list", check=False).returncode:
        pytest.skip("`ip netns` unavailable")
    name = f"tw-{os.getpid()}-{secrets.token_hex(3)}"
    created = run("ip", "netns", "add", name, check=False)
    if created.returncode:
        pytest.skip(f"cannot create a network namespace: {created.stderr.strip()}")
    try:
        yield name
    finally:
        run("ip", "netns", "del", name, check=False)  # also destroys the veth pair


def read_in_netns(ns: str, names: list[str]) -> dict:
    """Run the reader inside `ns` (Python 3.11 has no os.setns, so a child process)."""
    script = (
        "import json, sys, tunewatch.facts.ethtool_live as e\n"
        "out = {}\n"
        "for name in sys.argv[1:]:\n"
        "    try: out[name] = e.read_interface(name)\n"
        "    except e.EthtoolUnavailable as exc: out[name] = {'unavailable': str(exc)}\n"
        "print(json.dumps(out))\n"
    )
    env = {**CLI_ENV, "PYTHONPATH": str(Path(tunewatch.__file__).resolve().parents[1])}
    proc = subprocess.run(
        ["ip", "netns", "exec", ns, sys.executable, "-c", script, *names],
        capture_output=True, text=True, env=env, check=True,
    )  # fmt: skip
    return json.loads(proc.stdout)


def test_veth_in_netns_matches_cli(netns):
    def ns_run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
        return run("ip", "netns", "exec", netns, *args, check=check)

    queues = ("numrxqueues", "4", "numtxqueues", "4")
    if ns_run("ip", "link", "add", "va", *queues, "type", "veth", "peer", "name", "vb", *queues,
              check=False).returncode:  # fmt: skip
        ns_run("ip", "link", "add", "va", "type", "veth", "peer", "name", "vb")

    # Distinct rx and tx counts so that swapped struct fields would show.
    maxima = parse_two_blocks(ns_run("ethtool", "-l", "va").stdout, CHANNEL_LABELS)
    want_rx, want_tx = min(2, maxima["rx-max"] or 0), min(3, maxima["tx-max"] or 0)
    set_channels = want_rx >= 1 and want_tx >= 1
    if set_channels:
        ns_run("ethtool", "-L", "va", "rx", str(want_rx), "tx", str(want_tx))
    # veth starts with GRO off and TSO on: flip both; TSO is a multi-feature legacy flag.
    ns_run("ethtool", "-K", "va", "gro", "on", "tso", "off")

    got = read_in_netns(netns, ["va", "lo", "eth0", "tw-nonexistent"])
    va = got["va"]
    assert_matches_cli(va, lambda opt: ns_run("ethtool", opt, "va", check=False))
    assert va["driver"]["driver"] == "veth"
    if set_channels:
        assert (va["channels"]["rx"], va["channels"]["tx"]) == (want_rx, want_tx)
    assert va["features"]["generic-receive-offload"] is True
    assert va["features"]["tcp-segmentation-offload"] is False
    assert va["features"]["tx-tcp-segmentation"] is False
    assert "rx-gro" not in va["features"]  # shown only under its legacy name
    assert "rings" not in va  # veth has no ring parameters

    # lo exists but has no driver info: that section is absent, the rest is read.
    assert "driver" not in got["lo"] and got["lo"]["features"]
    assert_matches_cli(got["lo"], lambda opt: ns_run("ethtool", opt, "lo", check=False))
    # The reader sees the namespace's devices, not the host's.
    assert "unavailable" in got["eth0"] and "unavailable" in got["tw-nonexistent"]


def _host_nic() -> str | None:
    net = Path("/sys/class/net")
    for dev in sorted(net.iterdir()) if net.is_dir() else []:
        if dev.name != "lo" and (dev / "device").exists():
            return dev.name
    return None


@needs_ethtool
def test_host_nic_matches_cli():
    nic = _host_nic()
    if nic is None:
        pytest.skip("no interface with a device link in /sys/class/net")
    result = read_interface(nic)
    assert_matches_cli(result, lambda opt: run("ethtool", opt, nic, check=False))
    assert result["driver"]["driver"] == Path(f"/sys/class/net/{nic}/device/driver").resolve().name


def test_nonexistent_interface_raises():
    name = "twx" + secrets.token_hex(4)
    assert not Path(f"/sys/class/net/{name}").exists()
    with pytest.raises(EthtoolUnavailable, match="ENODEV"):
        read_interface(name)
    for bad in ("", "a" * 16, "a\0b"):  # cannot be an interface name at all
        with pytest.raises(EthtoolUnavailable):
            read_interface(bad)


@pytest.mark.parametrize(
    "name, pattern, expected",
    [
        ("tx-tcp6-segmentation", "tx-tcp*-segmentation", True),
        ("tx-tcp-segmentation", "tx-tcp*-segmentation", True),
        ("tx-tcp-segmentatio", "tx-tcp*-segmentation", False),
        ("tx-scatter-gather", "tx-scatter-gather*", True),
        ("tx-checksum-", "tx-checksum-*", True),
        ("tx-checksum", "tx-checksum-*", False),
        ("rx-gro-hw", "rx-gro", False),
    ],
)
def test_pattern_match_like_ethtool(name, pattern, expected):
    assert ethtool_live._pattern_match(name, pattern) is expected
