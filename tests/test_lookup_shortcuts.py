"""Lookups made cheaper for big hosts (issue 29), held to the plain expression they replace
on random inputs: the same answer for every input, not just the benchmark's."""

from __future__ import annotations

import random
from pathlib import Path

import yaml

from tunewatch.facts.boot import NetworkMounts
from tunewatch.kinds.nfs_mount_options import Meanings, _Relevant

PARTS = ["", "opt", "sas", "usr", "a", "a/", "/", "x y", "opt/", "sas.d"]


def _path(rng: random.Random) -> str:
    return "/" + "/".join(rng.choice(PARTS) for _ in range(rng.randint(0, 4)))


def test_below_a_network_mount_as_the_prefix_test_says():
    """_script_text() skips a script on or below a network mount point: the plain test was
    `path == m or path.startswith(m.rstrip("/") + "/")` for each of the host's mounts."""
    rng = random.Random(29)
    for _ in range(20000):
        mounts = tuple(_path(rng) for _ in range(rng.randint(0, 5)))
        path = _path(rng)
        if rng.random() < 0.2:
            path = path.lstrip("/")
        want = any(path == m or path.startswith(m.rstrip("/") + "/") for m in mounts)
        assert NetworkMounts(mounts).hold(path) == want, (path, mounts)


def test_relevance_of_an_option_with_a_value_is_that_of_its_name():
    """nfs-mount-options judges only the options that mean a wanted key; an option with a
    value is looked up by its name (`addr=` of a thousand servers once): the same answer
    as resolving each option's meaning."""
    with open(Path(__file__).parent.parent / "checks" / "storage" / "nfs-mount-options.yaml") as f:
        v = yaml.safe_load(f)["vars"]
    wanted = {"vers", "hard", "proto", "rsize", "rdirplus", "noatime"}
    rng = random.Random(3)
    names = ["vers", "nfsvers", "addr", "tcp", "udp", "soft", "hard", "nordirplus", "rsize", "atime", "x"]
    values = [None, "3", "3.0", "10.0.0.4", "", "tcp"]
    for _ in range(200):
        relevant = _Relevant(Meanings(v), wanted)
        for _ in range(30):
            pair = (rng.choice(names), rng.choice(values))
            assert relevant[pair] == (Meanings(v)[pair][0] in wanted), pair


class _Mounts:
    """The one fact select_mounts reads (no memo: each call selects afresh)."""

    def __init__(self, mountinfo):
        self.mountinfo = mountinfo


def test_a_selector_of_file_system_types_selects_as_its_clauses_do():
    """select_mounts tests a selector that names only `fstype` (the NFS checks') as a set,
    one selector at a time: the same mounts, in the same order, as the plain test of every
    selector's clauses per mount (`_selected`), the last selected mount on a path visible."""
    from tunewatch.kinds import selectors
    from tunewatch.parsers.mountinfo import MountInfo

    rng = random.Random(2929)
    fstypes, points = ["nfs", "nfs4", "xfs", "tmpfs", "cifs"], ["/", "/a", "/sas", "/sas/x", "/b"]

    def selector():
        pick = rng.random()
        if pick < 0.2:
            return None
        if pick < 0.3:
            return {}
        include = [{"fstype": rng.sample(fstypes, rng.randint(0, 3))} for _ in range(rng.randint(0, 2))]
        if rng.random() < 0.3:
            include.append({"fstype": ["nfs"], "path": "^/sas"})
        out: dict = {"include": include} if include or rng.random() < 0.5 else {}
        if rng.random() < 0.2:
            out["exclude"] = [{"path": "^/a"}]
        return out

    for _ in range(3000):
        mounts = [MountInfo(n, 1, 0, n, "/", rng.choice(points), (), (), rng.choice(fstypes), "src", (), n)
                  for n in range(rng.randint(0, 8))]
        sels = tuple(selector() for _ in range(rng.randint(0, 3)))
        seen: dict = {}
        for m in mounts:
            if all(selectors._selected(s, m, selectors._mount_clause) for s in sels):
                seen[m.mount_point] = m
        assert selectors.select_mounts(_Mounts(mounts), *sels) == list(seen.values()), sels


def test_fstab_tail_read_without_a_call_per_field_as_uint_reads_it():
    """parse_fstab reads a `0` freq or passno without uint(); every other spelling still goes
    through uint() (`00` is 0, `0x1` and `-1` are errors naming the field)."""
    import pytest

    from tunewatch.errors import ParseError
    from tunewatch.parsers.fstab import parse_fstab

    entries = parse_fstab("a /x nfs rw\nb /y nfs rw 0\nc /z nfs rw 00 0\nd /w\\040v nfs rw 1 2\n", "etc/fstab")
    assert [(e.file, e.freq, e.passno) for e in entries] == [("/x", 0, 0), ("/y", 0, 0), ("/z", 0, 0),
                                                              ("/w v", 1, 2)]
    for tail, what in (("0x1 0", "dump frequency"), ("0 -1", "fsck pass"), ("0 ٣", "fsck pass")):
        with pytest.raises(ParseError, match=what):
            parse_fstab(f"a /x nfs rw {tail}\n", "etc/fstab")


def test_once_per_object_answers_as_its_function_per_object():
    """kinds.base.OncePerObject (an fstab line's judgement, by its option tuple's identity):
    the function's answer for every object, computed once per object, and a tuple equal to
    another but not the same object gets its own computation."""
    from tunewatch.kinds.base import OncePerObject

    calls: list = []
    memo = OncePerObject(lambda pairs: calls.append(pairs) or len(pairs))
    a = (("rw", None), ("nconnect", "8"))
    b = tuple(list(a))  # equal, another object
    assert [memo(a), memo(a), memo(b), memo(())] == [2, 2, 2, 0]
    assert [x is a for x in calls[:1]] == [True] and len(calls) == 3
