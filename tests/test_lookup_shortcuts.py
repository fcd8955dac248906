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
