"""The content cache's key is the identity of every file (contentkey): an edit of the same
size is still seen, and a file changed just now (a "racy" stat) is never cached on."""

from __future__ import annotations

import os
import shutil

from tunewatch.content import cachekey as contentkey
from tunewatch.content.catalog import Content, default_content_dir


def _copy(tmp_path) -> str:
    directory = str(tmp_path / "checks")
    shutil.copytree(default_content_dir(), directory)
    return directory


def test_a_file_changed_just_now_is_neither_cached_nor_trusted(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    directory = _copy(tmp_path)  # every file's ctime is now
    Content(directory)
    assert not os.path.exists(tmp_path / "cache" / "tunewatch" / contentkey.file_name(directory))
    path = os.path.join(directory, "profiles", os.listdir(os.path.join(directory, "profiles"))[0])
    assert contentkey.cache_key("h", [path]) is None
    monkeypatch.setattr(contentkey, "RACY_NS", -10**18)  # as if the files were old
    assert contentkey.cache_key("h", [path]).startswith("h\n" + path + "\0")
    assert contentkey.cache_key("h", [os.path.dirname(path)]) is None  # not a regular file
    assert contentkey.cache_key("h", [path + ".missing"]) is None


def test_an_edit_of_the_same_size_is_seen(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(contentkey, "RACY_NS", -10**18)  # trust the fresh copy's stats
    directory = _copy(tmp_path)
    first = Content(directory)
    cached = Content(directory)
    assert cached._validator_table is None and cached.digest == first.digest  # from the cache
    check = os.path.join(directory, "network", "nic-irq-affinity.yaml")
    with open(check, "r+", encoding="utf-8") as f:  # in place: same inode, same size
        text = f.read()
        f.seek(0)
        f.write(text.replace("NIC data IRQs", "NIC data IRQS", 1))
    assert os.path.getsize(check) == len(text.encode())
    edited = Content(directory)
    assert edited._validator_table is not None and edited.digest != first.digest  # validated again


def test_file_names_differ_by_directory():
    names = {contentkey.file_name(d) for d in ("/a", "/b", "/a/", "/usr/share/tunewatch/checks")}
    assert len(names) == 4 and all(n.startswith("content-") and len(n) == len("content-") + 16 + 8 for n in names)
