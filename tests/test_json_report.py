"""outputs/report.py dumps_indented: json.dumps(value, indent=2), byte for byte, for the
reports of every example snapshot and for values the report never holds (handed back to
json.dumps)."""

from __future__ import annotations

import enum
import json
import random
from pathlib import Path

import pytest

from tunewatch.content.catalog import Content
from tunewatch.outputs.report import dumps_indented, render_json, to_dict
from tunewatch.scan import engine

EXAMPLES = sorted((Path(__file__).resolve().parent / "snapshots" / "examples").iterdir())


class Colour(enum.IntEnum):
    RED = 1


class Name(str):
    pass


ODD = [
    {}, [], (), "", 0, -0.0, 1e300, -1.5e-7, 2**70, True, False, None, float("nan"), float("inf"), -float("inf"),
    "\u00e9\u2028\x00\x1f\"\\/\ud800", {"a": {"b": [], "c": {}}}, [[[]], {}], (1, [2, (3,)]),
    {1: "int key"}, {None: 1, True: 2, 1.5: 3}, Colour.RED, [Colour.RED], Name("x"), {"k": Name("v")},
]


@pytest.mark.parametrize("value", ODD, ids=range(len(ODD)))
def test_odd_values_as_json_dumps(value):
    assert dumps_indented(value) == json.dumps(value, indent=2)


def test_unencodable_values_raise_as_json_dumps():
    for value in ({"k": object()}, [{1, 2}], {(1, 2): 3}):
        with pytest.raises(TypeError):
            dumps_indented(value)


def _random_value(rng: random.Random, depth: int = 0):
    pick = rng.randrange(9 if depth < 5 else 6)
    if pick == 0:
        return rng.choice([None, True, False])
    if pick == 1:
        return rng.randrange(-10**6, 10**6)
    if pick == 2:
        return rng.uniform(-1e6, 1e6)
    if pick in (3, 4, 5):
        return "".join(chr(rng.choice([rng.randrange(0x20, 0x7F), rng.randrange(0x10000)]))
                       for _ in range(rng.randrange(6)))
    if pick in (6, 7):
        return {_random_value(rng, 9) if rng.random() < 0.1 else str(i): _random_value(rng, depth + 1)
                for i in range(rng.randrange(4))}
    return [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))]


def test_random_values_as_json_dumps():
    rng = random.Random(29)
    for _ in range(2000):
        value = _random_value(rng)
        try:
            expected = json.dumps(value, indent=2)
        except TypeError:
            continue
        assert dumps_indented(value) == expected


@pytest.mark.parametrize("root", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_reports_as_json_dumps(root):
    content = Content()
    profile = content.resolve("auto")
    result = engine.scan(content, profile, str(root))
    assert render_json(result) == json.dumps(to_dict(result), indent=2) + "\n"
