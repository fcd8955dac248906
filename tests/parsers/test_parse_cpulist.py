from __future__ import annotations
import pytest
from hypothesis import given, settings, strategies as st

from tunewatch.errors import ParseError
from tunewatch.parsers.cpulist import MAX_CPU, format_cpulist, parse_cpulist


@pytest.mark.parametrize("text, cpus", [
    ("0-3,8,10-11", {0, 1, 2, 3, 8, 10, 11}),
    ("0-3,8,10-11\n", {0, 1, 2, 3, 8, 10, 11}),
    ("5", {5}),
    ("", set()),
    ("  \n", set()),
    ("0-7:2", {0, 2, 4, 6}),
    ("0-15:2/8", {0, 1, 8, 9}),
    ("1-1", {1}),
    ("3,1,2", {1, 2, 3}),
    (f"{MAX_CPU}", {MAX_CPU}),
])
def test_parse(text, cpus):
    assert parse_cpulist(text, "t") == frozenset(cpus)


@pytest.mark.parametrize("text", [
    "3-1", "-1", "0--3", "a", "0-3,", ",0", "0,,1", "0-3:0", "0-3:3/2", "0-3:0/2", "1.5",
    f"{MAX_CPU + 1}", "0-99999999", "1" * 5000, "٣", "²", "0 1", "0-7:2/", "N",
])
def test_reject(text):
    with pytest.raises(ParseError) as e:
        parse_cpulist(text, "proc/irq/24/smp_affinity_list")
    assert e.value.source == "proc/irq/24/smp_affinity_list"


@pytest.mark.parametrize("cpus, text", [
    ([0, 1, 2, 3, 8, 10, 11], "0-3,8,10-11"),
    ([], ""),
    ([7], "7"),
    ([4, 5], "4-5"),
    ([3, 1, 2, 2], "1-3"),
    (frozenset({0, 2, 4}), "0,2,4"),
])
def test_format(cpus, text):
    assert format_cpulist(cpus) == text


_cpu = st.integers(0, MAX_CPU)
_ranges = st.lists(st.tuples(_cpu, st.integers(0, 40)), max_size=8).map(
    lambda rs: frozenset(c for a, n in rs for c in range(a, min(a + n, MAX_CPU) + 1)))


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.frozensets(_cpu, max_size=40), _ranges))
def test_round_trip(cpus):
    assert parse_cpulist(format_cpulist(cpus), "t") == cpus


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(), st.text(alphabet="0123456789-,:/ \n", max_size=30)))
def test_any_text_parses_or_raises_parse_error(text):
    try:
        cpus = parse_cpulist(text, "t")
    except ParseError:
        return
    assert all(0 <= c <= MAX_CPU for c in cpus)
    assert parse_cpulist(format_cpulist(cpus), "t") == cpus


@pytest.mark.parametrize("text", [
    ",".join([f"0-{MAX_CPU}"] * 20_000),  # 20,000 huge ranges: minutes of set updates before
    ",".join([f"0-{MAX_CPU}:1/2"] * 9),
    "0," * 40_000 + "0",  # longer than any list the kernel writes
])
def test_hostile_lists_are_refused_fast(text):
    import time
    t0 = time.process_time()
    with pytest.raises(ParseError):
        parse_cpulist(text, "proc/irq/24/smp_affinity_list")
    assert time.process_time() - t0 < 5  # CPU time, generous: was minutes


def test_every_cpu_of_the_largest_machine():
    assert parse_cpulist(f"0-{MAX_CPU}", "t") == frozenset(range(MAX_CPU + 1))
    assert len(parse_cpulist(",".join(str(c) for c in range(0, MAX_CPU + 1, 2)), "t")) == (MAX_CPU + 1) // 2
