"""Driver and module defaults as content (checks/defaults, facts/defaults.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tunewatch.content.catalog import Content, default_content_dir
from tunewatch.errors import ContentError
from tunewatch.facts.defaults import Defaults
from tunewatch.facts.host import Host


def host(kernel: str, os_id: str = "sles") -> Host:
    return Host("h", kernel, os_id, "", "", "azure", "", None)


@pytest.fixture(scope="module")
def defaults() -> Defaults:
    return Content().defaults


@pytest.mark.parametrize("kernel, vcpus, expected", [
    ("5.14.21-150400.24.81-default", 64, "8"), ("5.14.21-150400.24.81-default", 4, "4"),
    ("6.12.0-160000.5-default", 8, "8"), ("6.12.0-160000.5-default", 32, "16"), ("6.12.0-160000.5-default", 64, "16"),
    ("6.12.0-160000.5-default", 128, "32"), ("6.12.0-160000.5-default", 256, "64"),
    ("6.12.0-160000.5-default", 416, "64"), ("6.13.2", 1664, "64")])
def test_hv_netvsc_channels(defaults: Defaults, kernel: str, vcpus: int, expected: str) -> None:
    d = defaults.lookup("hv_netvsc", "channels.combined", host(kernel), vcpus, {"channels": {"combined-max": 64}})
    assert d.value == expected
    assert d.source.startswith("driver default (hv_netvsc, Linux ")


def test_capped_by_the_devices_maximum(defaults: Defaults) -> None:
    d = defaults.lookup("hv_netvsc", "channels.combined", host("6.12.0"), 416, {"channels": {"combined-max": 16}})
    assert d.value == "16" and "capped at channels.combined-max 16" in d.source


def test_unknown_driver_kernel_or_cpus(defaults: Defaults) -> None:
    assert defaults.lookup("mana", "channels.combined", host("6.12.0"), 8) is None
    assert defaults.lookup("mlx5_core", "channels.combined", host("4.15.0-1113-azure", "ubuntu"), 8) is None
    assert defaults.lookup("hv_netvsc", "channels.combined", host("unknown"), 8) is None
    assert defaults.lookup("hv_netvsc", "channels.combined", host("5.14.21"), None) is None


def test_module_defaults_and_assumption(defaults: Defaults) -> None:
    d = defaults.lookup("sunrpc", "sunrpc.tcp_slot_table_entries", host("4.18.0-305.el8.x86_64", "rhel"))
    assert (d.value, d.source) == ("2", "module default (sunrpc: 2)")
    d = defaults.lookup("hv_netvsc", "channels.combined", host("5.14.0-427.el9.x86_64", "rhel"), 8)
    assert "assuming the rhel kernel has no backport" in d.assumption


def test_a_distribution_entry_wins_over_the_upstream_version() -> None:
    docs = [{"module": "hv_netvsc", "type": "driver", "defaults": [
        {"setting": "channels.combined", "kernel": {"below": "6.12"}, "value": 8, "cite": "upstream hyperv_net.h"},
        {"setting": "channels.combined", "distribution": {"os_id": ["rhel"], "from": "5.14.0-500"}, "value": 16,
         "cite": "a backport (example)"}]}]
    d = Defaults(docs)
    assert d.lookup("hv_netvsc", "channels.combined", host("5.14.0-503.el9.x86_64", "rhel")).value == "16"
    assert d.lookup("hv_netvsc", "channels.combined", host("5.14.0-427.el9.x86_64", "rhel")).value == "8"
    assert d.lookup("hv_netvsc", "channels.combined", host("5.14.21", "sles")).value == "8"


def test_every_entry_cites_its_source(defaults: Defaults) -> None:
    content = Content()
    assert content.default_docs
    for doc in content.default_docs:
        assert all(len(e["cite"]) > 20 for e in doc.data["defaults"]), doc.path


def test_a_bad_defaults_file_is_a_content_error(tmp_path: Path) -> None:
    content_dir = tmp_path / "checks"
    shutil.copytree(default_content_dir(), content_dir)
    (content_dir / "defaults" / "broken.yaml").write_text(
        "module: e1000\ntype: driver\ndefaults:\n  - setting: channels.combined\n    value: [1]\n    cite: none\n")
    with pytest.raises(ContentError) as e:
        Content(str(content_dir), use_cache=False)
    assert "broken.yaml" in str(e.value)
