"""LazyPattern: compiled on first use, then the same answers as re.compile's pattern."""

from __future__ import annotations

import re

from tunewatch._lazyre import lazy


def test_lazy_pattern_compiles_on_first_use_and_answers_like_re():
    p = lazy(r"(\d+)-(\d+)", re.ASCII)
    assert "match" not in vars(p)  # nothing compiled yet
    assert p.fullmatch("1-2").groups() == ("1", "2") and "match" in vars(p)
    plain = re.compile(r"(\d+)-(\d+)", re.ASCII)
    for text in ("x 1-2 3-4", "", "5-6"):
        assert p.findall(text) == plain.findall(text) and p.sub("#", text) == plain.sub("#", text)
        assert p.split(text) == plain.split(text) and [m.span() for m in p.finditer(text)] == \
            [m.span() for m in plain.finditer(text)]
    assert (p.pattern, p.flags, p.groups) == (plain.pattern, plain.flags, plain.groups)
