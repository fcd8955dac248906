"""NetworkManager's device list syntax (NetworkManager.conf(5) "Device List Format") and
dispatcher guards (NetworkManager-dispatcher(8) `$1`/`$2`), judged on small cases."""

from __future__ import annotations

import pytest

from tunewatch.facts import nm_dispatch
from tunewatch.facts.netdevice import NetDevice
from tunewatch.facts.nmconf import spec_matches, unmanaged_specs
from tunewatch.host.fs import FS

VF = NetDevice("enP1s1", "mlx5_core", "00:0d:3a:2e:9c:41", "00:0d:3a:2e:9c:41", None, "ether",
               "sys/class/net/enP1s1", ())


@pytest.mark.parametrize("specs, want", [
    (["*"], True),
    (["enP1s1"], True), (["enP*"], False),  # a bare IFNAME: "Globbing is not supported"
    (["interface-name:enP*"], True), (["interface-name:~enP?s1"], True), (["interface-name:=enP*"], False),
    (["mac:00:0D:3A:2E:9C:41"], True), (["00:0d:3a:2e:9c:41"], True), (["mac:00:0d:3a:2e:9c:42"], False),
    (["driver:mlx5_core"], True), (["driver:mlx4_core"], False), (["type:ethernet"], True),
    (["except:interface-name:eth0"], True),  # only negatives: the same as "*,except:..."
    (["driver:mlx5_core", "except:interface-name:enP1s1"], False),  # a negative match wins
    (["interface-name:eth*", "driver:mlx5_core"], True),
])
def test_device_list_format(specs, want):
    assert spec_matches(specs, VF)[0] is want


def test_unjudged_spec_is_named_never_guessed():
    hit, unjudged = spec_matches(["s390-subchannels:0.0.0800"], VF)
    assert hit is None and unjudged == ["s390-subchannels:0.0.0800"]
    assert spec_matches(["s390-subchannels:0.0.0800", "driver:mlx5_core"], VF)[0] is True


def test_conf_d_order_and_list_operators(tmp_path):
    """usr/lib conf.d first, then NetworkManager.conf, then etc conf.d (same name shadows
    usr/lib); `+=` appends, `-=` removes; /run is empty at the next boot."""
    (tmp_path / "usr/lib/NetworkManager/conf.d").mkdir(parents=True)
    (tmp_path / "etc/NetworkManager/conf.d").mkdir(parents=True)
    (tmp_path / "run/NetworkManager/conf.d").mkdir(parents=True)
    (tmp_path / "usr/lib/NetworkManager/conf.d/50-vendor.conf").write_text("[keyfile]\nunmanaged-devices=driver:mana\n")
    (tmp_path / "usr/lib/NetworkManager/conf.d/60-shadowed.conf").write_text("[keyfile]\nunmanaged-devices+=eth9\n")
    (tmp_path / "etc/NetworkManager/conf.d/60-shadowed.conf").write_text("# emptied by the admin\n")
    (tmp_path / "etc/NetworkManager/NetworkManager.conf").write_text(
        "[main]\nplugins=keyfile\n\n[keyfile]\nunmanaged-devices+=driver:mlx5_core;interface-name:eth1\n")
    (tmp_path / "etc/NetworkManager/conf.d/90-local.conf").write_text("[keyfile]\nunmanaged-devices-=interface-name:eth1\n")
    (tmp_path / "run/NetworkManager/conf.d/99-runtime.conf").write_text("[keyfile]\nunmanaged-devices=*\n")
    specs, source = unmanaged_specs(FS(str(tmp_path)))
    assert specs == ["driver:mana", "driver:mlx5_core"]
    assert source == "etc/NetworkManager/conf.d/90-local.conf"


@pytest.mark.parametrize("script, managed, runs", [
    ('[ "$1" = "eth0" ] && [ "$2" = "up" ] || exit 0\nethtool -L "$1" combined 16', ["eth0", "enP1s1"], ["eth0"]),
    ('[ "$1" != "eth0" ] && exit 0\nethtool -L "$1" combined 16', ["eth0", "enP1s1"], ["eth0"]),
    ('if [ "$DEVICE_IFACE" = "enP1s1" ]; then\n  exit 0\nfi\nethtool -L "$1" combined 16', ["eth0", "enP1s1"], ["eth0"]),
    ('case "$1" in\n  eth*) ethtool -L "$1" combined 16 ;;\nesac', ["eth0", "enP1s1"], ["eth0"]),
    ('case "$1" in\n  enP*) exit 0 ;;\nesac\nethtool -L "$1" combined 16', ["eth0", "enP1s1"], ["eth0"]),
    ('[ "$2" = "down" ] || exit 0\nethtool -L "$1" combined 16', ["eth0"], []),  # never at boot
    ('ethtool -L "$1" combined 16', ["eth0"], ["eth0"]),  # unguarded: every managed device
])
def test_dispatcher_guards(script, managed, runs):
    assert nm_dispatch.runs_for(script, managed)[0] == runs
