"""Files read ahead in one pass (FS.prefetch: proc/irq/<irq>/*affinity_list,
sys/class/bdi/<bdi>/read_ahead_kb) give the facts what reading each alone gives, and a
file that cannot be read stays that file's own error: the pass stops there and leaves
it, and what follows, to the reads one by one."""

from __future__ import annotations

import os

import pytest

from tunewatch.errors import FactError
from tunewatch.facts import irqs, mounts
from tunewatch.facts.context import Facts
from tunewatch.host.fs import FS

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "snapshots", "examples")


def _write(root, rel: str, text: str) -> None:
    path = os.path.join(str(root), rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def _outcome(read, *args):
    try:
        return read(*args)
    except FactError as e:
        return f"FactError: {e}"


@pytest.mark.parametrize("example", sorted(d for d in os.listdir(EXAMPLES)
                                           if os.path.isdir(os.path.join(EXAMPLES, d, "proc", "irq"))))
def test_affinities_read_ahead_are_what_each_irq_alone_reads(example):
    root = os.path.join(EXAMPLES, example)
    numbers = sorted(int(n) for n in os.listdir(os.path.join(root, "proc", "irq")) if n.isdigit())
    numbers.append(max(numbers, default=0) + 1000)  # no proc/irq entry: None, as mlx4's stale msi_irqs
    ahead = FS(root)
    irqs.prefetch_affinities(ahead, numbers)
    found = {irq: _outcome(irqs.read_affinity, ahead, irq) for irq in numbers}
    assert found == {irq: _outcome(irqs.read_affinity, FS(root), irq) for irq in numbers}
    assert found[numbers[-1]] is None
    assert any(a is not None and a.smp for a in found.values())


@pytest.mark.parametrize("example", sorted(d for d in os.listdir(EXAMPLES)
                                           if os.path.isdir(os.path.join(EXAMPLES, d, "sys", "class", "bdi"))))
def test_read_ahead_kb_read_ahead_is_what_each_bdi_alone_reads(example):
    root = os.path.join(EXAMPLES, example)
    nfs = [m for m in Facts(FS(root)).mountinfo if m.fstype.startswith("nfs")]
    ahead = Facts(FS(root))
    ahead.prefetch_read_ahead_kb(nfs)
    assert [_outcome(ahead.read_ahead_kb, m) for m in nfs] == \
        [_outcome(mounts.read_ahead_kb, FS(root), m) for m in nfs]


def test_an_unreadable_file_is_its_own_error(tmp_path):
    _write(tmp_path, "proc/irq/40/smp_affinity_list", "2-3\n")
    _write(tmp_path, "proc/irq/40/effective_affinity_list", "2\n")
    os.makedirs(tmp_path / "proc/irq/41/smp_affinity_list")  # a directory: cannot be read
    _write(tmp_path, "proc/irq/42/smp_affinity_list", "4\n")
    _write(tmp_path, "proc/irq/42/effective_affinity_list", "\n")
    facts = Facts(FS(str(tmp_path)))
    facts.prefetch_affinities([40, 41, 42])
    assert facts.affinity(40).smp == frozenset({2, 3}) and facts.affinity(40).effective == frozenset({2})
    assert facts.affinity(42).smp == frozenset({4}) and facts.affinity(42).effective is None
    with pytest.raises(FactError, match="41/smp_affinity_list"):
        facts.affinity(41)


def test_the_pass_opens_the_directory_once_and_each_file_once(tmp_path, monkeypatch):
    for irq in (40, 41, 42):
        _write(tmp_path, f"proc/irq/{irq}/smp_affinity_list", f"{irq % 8}\n")
        _write(tmp_path, f"proc/irq/{irq}/effective_affinity_list", f"{irq % 8}\n")
    opened = []
    real_open = os.open

    def counted(path, *args, **kwargs):
        opened.append(path)
        return real_open(path, *args, **kwargs)

    facts = Facts(FS(str(tmp_path)))
    facts.fs.network_mounts  # noqa: B018 - the host's own mountinfo, read by the FS once
    monkeypatch.setattr("tunewatch.host.fs.os.open", counted)
    facts.prefetch_affinities([40, 41, 42])
    found = {irq: sorted(facts.affinity(irq).smp) for irq in (40, 41, 42)}
    monkeypatch.undo()
    assert found == {40: [0], 41: [1], 42: [2]}
    directories = [p for p in opened if not p.endswith("_affinity_list")]
    assert len(directories) == 1 and directories[0].rstrip("/").endswith("proc/irq")
    assert len(opened) == 1 + 6
