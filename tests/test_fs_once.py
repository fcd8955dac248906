"""A scan lists each directory once and opens each file once (issue 22), counted at the
os calls the FS makes, on the example snapshots and the generated big host."""

from __future__ import annotations

import collections
import importlib.util
import os
import stat

import pytest

from tunewatch.scan import engine
from tunewatch.host import fs
from tunewatch.content.catalog import Content

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "snapshots", "examples")


def _gen():
    spec = importlib.util.spec_from_file_location("gen_big_host", os.path.join(HERE, "..", "benchmarks", "gen_big_host.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def count_calls(monkeypatch, content, profile, root):
    opens, listings = collections.Counter(), collections.Counter()
    real_open, real_scandir, real_listdir = os.open, os.scandir, os.listdir

    def counted_open(path, *args, **kwargs):
        opens[path] += 1
        return real_open(path, *args, **kwargs)

    def counted_scandir(path="."):
        listings[path] += 1
        return real_scandir(path)

    def counted_listdir(path="."):
        listings[path] += 1
        return real_listdir(path)

    for name, fn in (("open", counted_open), ("scandir", counted_scandir), ("listdir", counted_listdir)):
        monkeypatch.setattr(fs.os, name, fn)
    result = engine.scan(content, profile, root)
    monkeypatch.undo()
    return result, opens, listings


@pytest.fixture(scope="module")
def content():
    return Content()


@pytest.mark.parametrize("example", sorted(d for d in os.listdir(EXAMPLES) if os.path.isdir(os.path.join(EXAMPLES, d))))
def test_example_lists_and_opens_once(monkeypatch, content, example):
    result, opens, listings = count_calls(monkeypatch, content, content.resolve("auto"), os.path.join(EXAMPLES, example))
    assert result.results and opens and listings
    assert {p: n for p, n in opens.items() if n > 1} == {}
    assert {p: n for p, n in listings.items() if n > 1} == {}


def test_big_host_lists_and_opens_once(monkeypatch, content, tmp_path):
    gen = _gen()
    root = gen.build(str(tmp_path / "host"), 64)
    result, opens, listings = count_calls(monkeypatch, content, content.resolve(gen.PROFILE), root)
    assert result.summary["fail"] > 0
    assert sum(opens.values()) > 3000  # every proc/<pid>/comm, smp_affinity_list, ...
    assert {p: n for p, n in opens.items() if n > 1} == {}
    assert {p: n for p, n in listings.items() if n > 1} == {}


def test_small_file_kept_per_fs_and_caps_still_hold(monkeypatch, tmp_path):
    (tmp_path / "value").write_text("1500\n")
    (tmp_path / "big").write_bytes(b"x" * (fs.SMALL_FILE_BYTES + 1))
    opened = collections.Counter()
    real_open = os.open

    def counted_open(path, *args, **kwargs):
        opened[os.path.basename(path)] += 1
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(fs.os, "open", counted_open)
    tree = fs.FS(str(tmp_path))
    assert tree.read_value("value") == "1500" and tree.read_text("value") == "1500\n"
    assert tree.read_text("missing") is None and tree.read_text("missing") is None
    assert len(tree.read_bytes("big")) == len(tree.read_bytes("big")) == fs.SMALL_FILE_BYTES + 1
    with pytest.raises(fs.FactError, match="larger than 3 bytes"):
        tree.read_bytes("value", 3)
    monkeypatch.undo()
    assert opened["value"] == 1
    assert opened["big"] == 2  # larger files are not kept: memory stays bounded
    assert fs.FS(str(tmp_path)).read_value("value") == "1500"  # a new scan reads afresh


def test_read_each_reads_as_read_value(tmp_path):
    """FS.read_each (proc/<pid>/comm in one loop) answers what read_value answers for each
    name: a plain folder, a folder link (resolved inside the root), a missing file, a name
    the listing lacks; a FIFO is an error, never opened."""
    proc = tmp_path / "proc"
    for pid, comm in (("1", "systemd\n"), ("22", "irqbalance\n"), ("7", None)):
        (proc / pid).mkdir(parents=True)
        if comm:
            (proc / pid / "comm").write_text(comm)
    os.symlink("22", proc / "33")
    for pid, target in (("8", "../1/comm"), ("9", "/proc/22/comm"), ("10", "/etc/hostname")):
        (proc / pid).mkdir()
        os.symlink(target, proc / pid / "comm")  # a file link: followed inside the root
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "hostname").write_text("inside\n")
    names = ["1", "22", "33", "7", "404", "8", "9", "10"]
    expected = {n: fs.FS(str(tmp_path)).read_value(f"proc/{n}/comm") for n in names}
    assert expected == {"1": "systemd", "22": "irqbalance", "33": "irqbalance", "7": None, "404": None,
                        "8": "systemd", "9": "irqbalance", "10": "inside"}
    assert fs.FS(str(tmp_path)).read_each("proc", names, "comm") == expected
    os.mkfifo(proc / "7" / "comm")
    with pytest.raises(fs.FactError, match="FIFO"):
        fs.FS(str(tmp_path)).read_each("proc", names, "comm")


def test_a_name_the_listing_lacks_is_absent_for_the_scan(tmp_path):
    """One view per scan: once a directory is listed, a file created in it afterwards is
    not seen by the same FS (no second lookup), and is by the next scan's FS."""
    (tmp_path / "etc").mkdir()
    tree = fs.FS(str(tmp_path))
    assert tree.listdir("etc") == []
    (tmp_path / "etc" / "late.conf").write_text("x\n")
    assert not tree.exists("etc/late.conf") and tree.read_text("etc/late.conf") is None
    assert fs.FS(str(tmp_path)).read_text("etc/late.conf") == "x\n"


def test_read_each_reads_every_kind_of_file_as_read_value(tmp_path, monkeypatch):
    """The one-loop read of read_each/prefetch (fileio.read_leaf_at) against read_value: an
    empty file and a kernel-sized one (size 0 and 4096 take the long read), a file larger
    than a page, a directory and a device node where a file should be (errors; the device
    is never opened), and a file replaced between its lstat and its open (the new one is
    read, through the general path)."""
    proc = tmp_path / "proc"
    contents = {"1": "systemd\n", "2": "", "3": "x" * 4095 + "\n", "4": "y" * 9000 + "\n"}
    for pid, text in contents.items():
        (proc / pid).mkdir(parents=True)
        (proc / pid / "comm").write_text(text)
    names = list(contents)
    expected = {n: fs.FS(str(tmp_path)).read_value(f"proc/{n}/comm") for n in names}
    assert expected == {n: t.strip() for n, t in contents.items()}
    assert fs.FS(str(tmp_path)).read_each("proc", names, "comm") == expected

    (proc / "5" / "comm").mkdir(parents=True)
    with pytest.raises(fs.FactError, match="directory"):
        fs.FS(str(tmp_path)).read_each("proc", [*names, "5"], "comm")
    (proc / "5" / "comm").rmdir()
    try:
        os.mknod(proc / "5" / "comm", 0o600 | stat.S_IFCHR, os.makedev(1, 3))  # /dev/null's numbers
    except PermissionError:
        pass  # not root: the FIFO case of the test above stands for it
    else:
        opened = []
        real_open = os.open
        monkeypatch.setattr(os, "open", lambda path, *a, **k: opened.append(str(path)) or real_open(path, *a, **k))
        with pytest.raises(fs.FactError, match="character device"):
            fs.FS(str(tmp_path)).read_each("proc", [*names, "5"], "comm")
        monkeypatch.undo()
        assert not any(p.endswith("5/comm") for p in opened)
        os.unlink(proc / "5" / "comm")

    real_open = os.open

    def swapping_open(path, *args, **kwargs):  # pid 1's comm replaced after its lstat, before its open
        if str(path) == "1/comm" and not swapped:
            swapped.append(True)
            os.rename(proc / "1" / "new", proc / "1" / "comm")
        return real_open(path, *args, **kwargs)

    swapped: list = []
    (proc / "1" / "new").write_text("replaced\n")
    monkeypatch.setattr(os, "open", swapping_open)
    assert fs.FS(str(tmp_path)).read_each("proc", ["1"], "comm") == {"1": "replaced"}
    assert swapped


def test_prefetch_through_links_as_sysfs_makes_them(tmp_path, monkeypatch):
    """sys/class/bdi/<bdi> is a link into sys/devices/virtual/bdi (sysfs makes every class
    entry a link): prefetch resolves each target directory once, opens it once, and reads
    each bdi's file from it, answering what read_value answers for every kind of link:
    relative, absolute (against the root), climbing above the root (kept inside it),
    dangling, to a link, to a file, into a network mount (refused)."""
    devices = tmp_path / "sys" / "devices" / "virtual" / "bdi"
    for n in range(6):
        (devices / f"0:{n}").mkdir(parents=True)
        (devices / f"0:{n}" / "read_ahead_kb").write_text(f"{1000 + n}\n")
    (tmp_path / "etc" / "x").mkdir(parents=True)
    (tmp_path / "etc" / "x" / "read_ahead_kb").write_text("7\n")
    (tmp_path / "nfs" / "0:9").mkdir(parents=True)
    (tmp_path / "nfs" / "0:9" / "read_ahead_kb").write_text("9\n")
    bdi = tmp_path / "sys" / "class" / "bdi"
    bdi.mkdir(parents=True)
    links = {"0:0": "../../devices/virtual/bdi/0:0", "0:1": "../../devices/virtual/bdi/0:1",
             "0:2": "/sys/devices/virtual/bdi/0:2", "0:3": "../../../../../../../etc/x",
             "0:4": "../../devices/virtual/bdi/gone", "0:5": "0:0",
             "0:6": "../../devices/virtual/bdi/0:5/read_ahead_kb",
             "0:9": "../../../nfs/0:9"}
    for name, target in links.items():
        os.symlink(target, bdi / name)
    names = [*links, "0:404"]
    rels = [f"sys/class/bdi/{n}/read_ahead_kb" for n in names]

    def fresh():
        tree = fs.FS(str(tmp_path))
        tree._network, tree._network_names = {"nfs": "nfs"}, frozenset({"nfs"})
        return tree

    def answer(tree, rel):
        try:
            return tree.read_value(rel)
        except fs.FactError as e:
            return f"error: {e}"

    expected = {rel: answer(fresh(), rel) for rel in rels}
    assert [expected[r] for r in rels] == ["1000", "1001", "1002", "7", None, "1000", None,
                                           expected[rels[-2]], None]
    assert expected[rels[-2]].startswith("error:") and "network" in expected[rels[-2]]

    calls = collections.Counter()
    real_open, real_readlink = os.open, os.readlink
    monkeypatch.setattr(os, "open", lambda p, flags, *a, **k: calls.update(
        ["dir" if flags & os.O_DIRECTORY else "file"]) or real_open(p, flags, *a, **k))
    monkeypatch.setattr(os, "readlink", lambda p, *a, **k: calls.update(["readlink"]) or real_readlink(p, *a, **k))
    tree = fresh()
    tree.prefetch("sys/class/bdi", names, ("read_ahead_kb",))
    prefetched = dict(calls)
    assert {rel: answer(tree, rel) for rel in rels} == expected
    assert prefetched["dir"] == 3  # sys/class/bdi, sys/devices/virtual/bdi and etc: each once
    # each link read once; the four that end in a directory read from it (a link to a link: its own read)
    assert prefetched["readlink"] == len(links) and prefetched["file"] == 4
    calls.clear()
    for rel in rels[:3]:
        tree.read_value(rel)
    assert not calls  # served from what prefetch read
