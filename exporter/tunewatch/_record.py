"""Plain `__slots__` classes that compare, hash and print like the dataclasses they replace.

A dataclass builds its methods with `exec` when its module is imported: ~0.5 ms a class,
and a scan imports ~40 of them before reading a byte (docs/architecture.md#start-up-cost). The records of the
parsers and fact readers use these bases with a hand-written `__init__` instead: equality
(same class, equal fields in order), `repr`, and for the frozen ones the hash of the field
tuple, as `@dataclass(frozen=True)` gives. Assigning a field is not refused: nothing
assigns to them. `dataclasses.replace()`/`asdict()` do not apply: `record.replace(**changes)`
is the former's equivalent; `_norepr` names fields left out of `repr` (`field(repr=False)`).
Even one dataclass on the scan path costs the `dataclasses` import (with inspect, ast, dis
and tokenize: ~6 ms), so the engine, content and fact records are all of these.
"""

from __future__ import annotations


class Record:
    __slots__: tuple[str, ...] = ()
    _norepr: tuple[str, ...] = ()

    def _fields(self) -> tuple:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return self._fields() == other._fields()
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, as a dataclass with eq and without frozen

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__ if name not in self._norepr)
        return f"{self.__class__.__qualname__}({fields})"

    def replace(self, **changes):
        """A copy with `changes` applied, as dataclasses.replace() makes one."""
        unknown = set(changes) - set(self.__slots__)
        if unknown:
            raise TypeError(f"{self.__class__.__qualname__} has no field {', '.join(sorted(unknown))}")
        new = object.__new__(self.__class__)
        for name in self.__slots__:
            setattr(new, name, changes[name] if name in changes else getattr(self, name))
        return new


class FrozenRecord(Record):
    __slots__ = ()

    def __hash__(self) -> int:  # type: ignore[override]  # Record is unhashable (None), this one is not
        return hash(self._fields())
