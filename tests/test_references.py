"""Every check names its sources by title and publisher (checks/references.yaml), and the
articles' titles are the ones the seed files open with where they have a title line."""

from __future__ import annotations

import glob
import os
import shutil

import pytest

from tunewatch.content.catalog import Content, default_content_dir
from tunewatch.errors import ContentError
from tunewatch.content.references import cite, load_sources

SEEDS = "/work/shared/seeds"


def test_every_reference_has_title_and_publisher():
    content = Content(use_cache=False)
    for check in content.checks.values():
        for ref in check.references:
            assert ref["title"] and (ref.get("publisher") or ref.get("url")), (check.id, ref)
            assert "seed" not in cite(ref).lower(), cite(ref)


@pytest.mark.skipif(not os.path.isdir(SEEDS), reason="the seed articles are not on this machine")
def test_titles_match_the_seed_files():
    sources = load_sources(default_content_dir())
    assert sorted(sources) == sorted(os.path.basename(p)[:3] for p in glob.glob(f"{SEEDS}/*.txt"))
    for path in glob.glob(f"{SEEDS}/*.txt"):
        with open(path, encoding="utf-8") as f:
            head = f.read(4000)
        title = sources[os.path.basename(path)[:3]]["title"]
        # 001 and 003 open with the body (no title line): their titles are the articles' own pages'
        if os.path.basename(path)[:3] in ("000", "002", "004"):
            assert head.splitlines()[0].strip() == title


def _content_copy(tmp_path):
    directory = tmp_path / "content"
    shutil.copytree(default_content_dir(), directory)
    return directory


def test_unknown_seed_is_a_content_error(tmp_path):
    directory = _content_copy(tmp_path)
    path = directory / "system/irqbalance-disabled.yaml"
    path.write_text(path.read_text().replace('seed: "000"', 'seed: "009"', 1))
    with pytest.raises(ContentError, match=r"seed '009' is not in references.yaml"):
        Content(str(directory), use_cache=False)


def test_malformed_sources_file_is_a_content_error(tmp_path):
    directory = _content_copy(tmp_path)
    (directory / "references.yaml").write_text('"000":\n  title: "x"\n')
    with pytest.raises(ContentError, match="publisher must be a non-empty string"):
        Content(str(directory), use_cache=False)


def test_cache_sees_a_changed_sources_file(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    directory = _content_copy(tmp_path)
    first = Content(str(directory))
    sources = directory / "references.yaml"
    sources.write_text(sources.read_text().replace("F5 DevCentral", "F5 DevCentral community"))
    second = Content(str(directory))
    assert first.digest != second.digest
    refs = [r for c in second.checks.values() for r in c.references if r.get("seed") == "002"]
    assert refs and all(r["publisher"] == "F5 DevCentral community" for r in refs)
