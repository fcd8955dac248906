"""facts/udev_shared.SharedOutcomes against udev.evaluate(), device by device: the same
outcome for bdis and block devices that differ only by name, on random rule sets mixing
every token the engine knows (tests/test_udev_perf_differential.py's) with the ways a
rule can use the name: `%k`/`$kernel`/`$devpath` in RUN, ATTR, SYSCTL, ENV, TAG and
SYMLINK, a literal equal to a device's name, `%n`, programs whose answer holds the name,
attributes that differ between devices. The counts prove that both the shared path and
each way out of it (a name the rules test, answers that differ, two entries made one)
were taken."""

from __future__ import annotations

import random

import pytest

from test_udev_perf_differential import DEBIAN, _files, _line
from tunewatch.facts import udev, udev_shared
from tunewatch.facts.udev_shared import SharedOutcomes

NAMED = [  # the name used by assignments and tests (%k and friends), and literals equal to a name
    'RUN+="/bin/x %k"', 'RUN+="/bin/x 0:61"', 'RUN{builtin}+="b $kernel"', 'ATTR{%k}="1"', 'ATTR{0:61}="2"',
    'ATTR{read_ahead_kb}="$kernel"', 'SYSCTL{net/%k}="1"', 'ENV{N}="%k"', 'ENV{N}=="0:6*"', 'ENV{N}+="x"',
    'TAG+="t%k"', 'TAG+="t0:61"', 'SYMLINK+="disk/%k"', 'SYMLINK+="disk/0:61 other"', 'SYMLINK-="disk/0:61"',
    'RUN+="%n"', 'RUN+="$devpath"', 'PROGRAM=="/bin/echo %k"', 'RESULT=="0:61"', 'KERNEL=="0:61"',
    'KERNEL=="0:6*"', 'DEVPATH=="*/0:61"', 'ATTR{ra}=="16"', 'ATTR{ra}=="32"', 'PROGRAM=="/usr/libexec/nfsrahead %k"',
    'ATTR{read_ahead_kb}="%c"', 'RUN+="%s{ra}"', 'TEST=="/sys/%k"', 'ENV{M}="%E{N}"', 'NAME="n%k"',
    'SUBSYSTEM=="bdi"', 'SUBSYSTEM=="block"', 'ACTION=="add"',
]


def _named_line(rng: random.Random) -> str:
    if rng.random() < 0.5:
        return _line(rng)
    return ", ".join(rng.sample(NAMED, rng.randint(1, 4)))


def _devices(calls: list[str]) -> list[udev.UdevDevice]:
    """Bdis and disks: most alike but for the name; some with another read-ahead, a name a
    rule writes literally, or a name that is not shared (blanks, `/`, `[`)."""
    def attrs(name: str, ra: str):
        def read(attr: str) -> str | None:
            calls.append(f"{name} read {attr}")
            return {"ra": ra, "read_ahead_kb": "128", name: "x"}.get(attr)
        return read

    def program(cmd: str):
        calls.append(cmd)
        if "nfsrahead" in cmd:
            return True, "128\n"
        return (True, cmd.split()[-1]) if cmd.startswith("/bin/echo") else None

    def test(path: str):
        calls.append(f"test {path}")
        return path.endswith("1")

    devices = []
    for n in range(12):
        name = f"0:{58 + n}"
        devices.append(udev.UdevDevice({"KERNEL": name, "SUBSYSTEM": "bdi", "DEVPATH": f"/devices/virtual/bdi/{name}"},
                                       attrs(name, "32" if n == 7 else "16"), program=program, test=test))
    for name in ("sdb", "sdc", "sd d", "sd/e", "sd[f]"):
        devices.append(udev.UdevDevice({"KERNEL": name, "SUBSYSTEM": "block", "DEVPATH": f"/devices/x/block/{name}",
                                        "ENV{DEVTYPE}": "disk"}, attrs(name, "16"), has_devnode=True, program=program,
                                       test=test))
    return devices


def _check(files, tally: dict[str, int]) -> None:
    shared = SharedOutcomes(files)
    for mine, usual in zip(_devices([]), _devices([])):
        got = shared.evaluate(mine)
        want = udev.evaluate(files, usual)
        assert got == want, (mine.values, got, want)
    for template in shared._templates.values():
        tally["kinds not shared"if template is None else "kinds shared"] += 1


@pytest.mark.parametrize("seed", range(300))
def test_random_rules_same_outcome(seed: int):
    rng = random.Random(seed)
    names = sorted(rng.sample(["10-a.rules", "60-b.rules", "99-c.rules"], rng.randint(1, 3)))
    files = _files({f"etc/udev/rules.d/{n}": "\n".join(_named_line(rng) for _ in range(rng.randint(1, 12))) + "\n"
                    for n in names})
    _check(files, {"kinds shared": 0, "kinds not shared": 0})


def test_every_path_is_taken():
    """Over the seeds above: kinds shared and not, devices given the template's outcome,
    and devices sent back to the usual loop by their answers (collisions: below)."""
    taken = {"kinds shared": 0, "kinds not shared": 0}
    fallbacks = {"answers": 0, "collisions": 0, "shared": 0}
    instance, named = udev_shared._Template.instance, udev_shared._named

    def counting_instance(self, dev):
        out = instance(self, dev)
        fallbacks["shared" if out is not None else "answers"] += 1
        return out

    def counting_named(o, kernel):
        out = named(o, kernel)
        if out is None:
            fallbacks["collisions"] += 1
        return out

    udev_shared._Template.instance, udev_shared._named = counting_instance, counting_named  # type: ignore[method-assign]
    try:
        for seed in range(300):
            rng = random.Random(seed)
            names = sorted(rng.sample(["10-a.rules", "60-b.rules", "99-c.rules"], rng.randint(1, 3)))
            _check(_files({f"etc/udev/rules.d/{n}": "\n".join(_named_line(rng) for _ in range(rng.randint(1, 12)))
                           + "\n" for n in names}), taken)
    finally:
        udev_shared._Template.instance, udev_shared._named = instance, named  # type: ignore[method-assign]
    assert taken["kinds shared"] > 50 and taken["kinds not shared"] > 50, taken
    assert fallbacks["shared"] > 300 and fallbacks["answers"] > 20, fallbacks


@pytest.mark.parametrize("lines", [
    ('RUN+="/bin/x %k"', 'RUN+="/bin/x 0:61"'),
    ('RUN+="/bin/x 0:61"', 'RUN+="/bin/x $kernel"'),
    ('RUN{builtin}+="path_id %k"', 'RUN{builtin}+="path_id 0:61"'),
    ('ATTR{%k}="1"', 'ATTR{0:61}="2"'),
    ('SYSCTL{net/%k}="1"', 'SYSCTL{net/0:61}="2"'),
    ('SYMLINK+="disk/%k"', 'SYMLINK+="disk/sdc"'),
])
def test_two_entries_made_one_by_the_name(lines: tuple[str, str]):
    """A rule that writes a device's name literally beside one that writes `%k`: for that
    device udev keeps one entry where the template has two; it is evaluated as usual."""
    files = _files({"etc/udev/rules.d/60-x.rules": "".join(f"{line}\n" for line in lines)})
    made_one = []
    named = udev_shared._named

    def watching(o, kernel):
        out = named(o, kernel)
        if out is None:
            made_one.append(kernel)
        return out

    udev_shared._named = watching
    try:
        _check(files, {"kinds shared": 0, "kinds not shared": 0})
    finally:
        udev_shared._named = named
    assert made_one == (["sdc"] if "sdc" in lines[1] else ["0:61"])


def test_seed_rule_shared_and_names_put_in():
    """Seed 003's rule and nfs-utils' nfsrahead rule: one kind for every bdi, each outcome
    the device's own (RUN names it)."""
    files = _files({"etc/udev/rules.d/99-nfs.rules":
                    'SUBSYSTEM=="bdi", ACTION=="add", PROGRAM="/bin/awk -v bdi=$kernel \'{}\' /proc/fs/nfsfs/volumes", '
                    'ATTR{read_ahead_kb}="15380", RUN+="/bin/log %k"\n'})
    shared = SharedOutcomes(files)
    devices = [d for d in _devices([]) if d.values["SUBSYSTEM"] == "bdi"]
    outs = [shared.evaluate(d) for d in devices]
    assert [o.run[0][0] for o in outs] == [f"/bin/log {d.values['KERNEL']}" for d in devices]
    assert all(o.attrs["read_ahead_kb"][0] == "15380" for o in outs)
    assert [t is not None for t in shared._templates.values()] == [True]


def test_debian_rules_bdis_shared_disks_as_usual():
    """Debian 12's 50 rules files: each bdi and each disk answers their KERNEL indexes and
    KERNEL tests as the stand-in does, so each kind shares one template, and every outcome
    is udev.evaluate's."""
    texts = {str(p.relative_to(DEBIAN)): p.read_text() for p in sorted(DEBIAN.rglob("*.rules"))}
    files = _files(dict(sorted(texts.items(), key=lambda kv: kv[0].rsplit("/", 1)[-1])))
    assert len(files) == 50
    _check(files, {"kinds shared": 0, "kinds not shared": 0})
    shared = SharedOutcomes(files)
    for dev in _devices([]):
        shared.evaluate(dev)
    kinds = {key[3]: template is not None for key, template in shared._templates.items()}
    assert kinds == {(("SUBSYSTEM", "bdi"),): True, (("SUBSYSTEM", "block"), ("ENV{DEVTYPE}", "disk")): True}
