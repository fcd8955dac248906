"""Plain `__slots__` classes that compare, hash and print like the dataclasses they replace.

A dataclass builds its methods with `exec` when its module is imported: ~0.5 ms a class,
and a scan imports ~40 of them before reading a byte (issue 22). The records of the
parsers and fact readers use these bases with a hand-written `__init__` instead: equality
(same class, equal fields in order), `repr`, and for the frozen ones the hash of the field
tuple, as `@dataclass(frozen=True)` gives. Assigning a field is not refused: nothing
assigns to them. `dataclasses.replace()`/`asdict()` do not apply: keep a dataclass where
those are used (facts.interfaces.Interface).
"""

from __future__ import annotations


class Record:
    __slots__ = ()

    def _fields(self) -> tuple:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return self._fields() == other._fields()
        return NotImplemented

    __hash__ = None  # mutable, as a dataclass with eq and without frozen

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{self.__class__.__qualname__}({fields})"


class FrozenRecord(Record):
    __slots__ = ()

    def __hash__(self) -> int:
        return hash(self._fields())
