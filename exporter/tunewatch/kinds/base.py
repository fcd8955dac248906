"""What a check kind receives and returns.

A kind is a module with `VARS_SCHEMA` (JSON Schema of its variables) and
`evaluate(target) -> list[ObjectResult]`. It raises FactError/ParseError for a fact that
the whole check depends on (the engine turns that into one `error` result) and returns an
`error` object for a fact that only one object depends on.
"""

from __future__ import annotations

from .._record import Record
from ..errors import FactError, ParseError
from ..results import Fix, ObjectResult, error_result
from .selectors import select_interfaces, select_mounts

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any, Callable

TYPE_CHECKING = False  # typing costs ~3 ms of start-up: docs/architecture.md#start-up-cost
if TYPE_CHECKING:  # the fact readers load in the scan child, not in every process (docs/architecture.md#start-up-cost)
    from ..facts.boot_mounts import BootMount
    from ..facts.context import Facts


_INFINITY = float("inf")


def as_number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    # math.isfinite without importing math, a shared library (docs/architecture.md#start-up-cost)
    return None if number != number or number in (_INFINITY, -_INFINITY) else number


class Target(Record):
    """One selected check about to be evaluated on one host."""
    __slots__ = ("check_id", "vars", "facts", "scope", "objects")
    check_id: str
    vars: dict
    facts: Facts
    scope: dict  # the profile's (tailored) scope
    objects: dict  # the check's own object filter

    def __init__(self, check_id: str, vars: dict, facts: Facts, scope: dict, objects: dict):
        self.check_id = check_id
        self.vars = vars
        self.facts = facts
        self.scope = scope
        self.objects = objects

    def interfaces(self):
        return select_interfaces(self.facts, self.scope.get("interfaces"), self.objects.get("interfaces"))

    def mounts(self):
        return select_mounts(self.facts, self.scope.get("mounts"), self.objects.get("mounts"))


class OncePerObject:
    """compute(obj) once per object, found by identity: a thousand fstab lines share a few
    option tuples (parsers/_text.options_splitter), and hashing a tuple of 15 options per
    mount costs what the lookup saves. Each object is held with its value, so its id is not
    reused by another object while the memo lives (one check's evaluation)."""
    __slots__ = ("compute", "_held")

    def __init__(self, compute: Callable[[Any], Any]):
        self.compute = compute
        self._held: dict[int, tuple[Any, Any]] = {}

    def __call__(self, obj: Any) -> Any:
        hit = self._held.get(id(obj))
        if hit is None or hit[0] is not obj:
            hit = self._held[id(obj)] = (obj, self.compute(obj))
        return hit[1]


def per_object(items: Iterable[Any], name: Callable[[Any], str],
               evaluate_one: Callable[[Any], ObjectResult]) -> list[ObjectResult]:
    """Evaluate objects one by one; an unreadable fact costs only that object."""
    results = []
    for item in items:
        try:
            results.append(evaluate_one(item))
        except (FactError, ParseError) as e:
            results.append(error_result(name(item), e))
    return results


def fstab_fix(spec: str, mount_point: str, vfstype: str, options: str, freq: object = 0, passno: object = 0) -> Fix:
    """The /etc/fstab line a fix asks for, each field as fstab(5) reads it (a blank as
    `\\040`: escape.fstab_field); a mount point or source no fstab line can hold (a
    newline) gets no line, only why (the line would be two lines, or another one)."""
    from .._escape import Unexpressible, fstab_field

    try:
        fields = [fstab_field(value, what) for value, what in ((spec, "source"), (mount_point, "mount point"),
                                                               (vfstype, "type"), (options, "options"))]
    except Unexpressible as e:
        return Fix(file="/etc/fstab", note=f"{e}: edit the line by hand")
    return Fix(file="/etc/fstab", change=f"{' '.join(fields)} {freq} {passno}")


def boot_mount_fix(bm: BootMount, options: str, autofs_note: str | None = None) -> Fix:
    """The change to the file that mounts `bm` at boot, carrying `options`: its fstab line,
    its `.mount` unit's Options=, or its autofs map entry, each written as its reader reads it."""
    if bm.fstab is not None:
        from ..facts.boot_mounts import noauto

        e = bm.fstab
        if noauto(e.options):  # nothing mounts the line at boot: the fix line drops noauto
            options = ",".join(o for o in options.split(",") if o != "noauto")
            fix = fstab_fix(e.spec, e.file, e.vfstype, options, e.freq, e.passno)
            return fix.replace(note=fix.note or "without noauto, systemd-fstab-generator mounts it at boot "
                                                "(or keep noauto and add x-systemd.automount: mounted on first use)")
        return fstab_fix(e.spec, e.file, e.vfstype, options, e.freq, e.passno)
    if bm.fix_file.endswith((".mount", ".conf")):  # a unit, or the drop-in that sets its Options=
        return _mount_unit_fix(bm.fix_file, options)
    return _autofs_fix(bm.fix_file, bm.map_key, options, bm.map_location or bm.spec, autofs_note)


def _mount_unit_fix(file: str, options: str) -> Fix:
    """The [Mount] Options= a `.mount` unit needs; `%` written `%%`, as the unit parser
    expands specifiers in Options= (systemd.mount(5))."""
    from .._escape import Unexpressible, unit_setting

    try:
        return Fix(file=file, change=f"[Mount]\nOptions={unit_setting(options, 'options')}",
                   note="then systemctl daemon-reload")
    except Unexpressible as e:
        return Fix(file=file, note=f"{e}: edit Options= by hand")


def _autofs_fix(file: str, key: str, options: str, location: str, note: str | None = None) -> Fix:
    """The autofs map entry `key -options location`, each field as the map has it; a field
    the map could not hold as one (escape.autofs_field) gets no line, only why."""
    from .._escape import Unexpressible, autofs_field

    try:
        fields = [autofs_field(value, what) for value, what in ((key, "key"), (options, "options"),
                                                               (location, "location"))]
    except Unexpressible as e:
        return Fix(file=file, note=f"{e}: edit the entry by hand")
    return Fix(file=file, change=f"{fields[0]} -{fields[1]} {fields[2]}", note=note)
