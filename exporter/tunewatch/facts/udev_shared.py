"""udev outcomes shared by the devices the rules cannot tell apart: the bdis of 1,000 NFS mounts.

Each NFS mount's bdi gets an "add" event through the same rules, and the bdis differ only
by name (`0:60`, `0:61`..., which DEVPATH ends with). `SharedOutcomes.evaluate()` gives
what `udev.evaluate()` gives, and costs a template's replay per device instead of udev's
line loop:

- The first device of a kind (its SUBSYSTEM, ACTION, properties, DEVPATH before the name)
  is evaluated once as a template: its name replaced by a stand-in (`STAND_IN`, with a NUL
  no rules file holds). Each program run, attribute read and TEST it makes is asked of
  the real device, with the name put back, and recorded with its answer.
- The engine's `trace` lists the questions about the name that decided the path: a
  KERNEL or DEVPATH token's test, a line's KERNEL tests, the files and lines the KERNEL
  indexes pick (each with the stand-in's answer: no literal name, `sd*` and the like are
  false for it, `*` and `!=` true). It says where the outcome depends on the name in a way
  not asked again: a parent token, `%n`, a test of a value that holds the stand-in
  (ENV{x}="%k" then ENV{x}=="..."). Then the kind is not shared.
- Otherwise each device of the kind answers the questions about its own name, and asks
  its own programs, attributes and TESTs what the template asked, in the same order, with
  its name in. When every answer is the template's, udev would take the same path through
  the same lines, and the outcome is the template's with the device's name in place of
  the stand-in. When one differs (a rule for this very bdi, `KERNEL=="0:61"`), or two
  entries of the outcome become one with the name put in (a rule that writes the name
  itself), the device is evaluated as usual.

Only names of letters, digits and `:._+@!-` are shared: a name with blanks, `[` or `/`
could meet a string operation (a SYMLINK list split on blanks, `[` of an ATTR name that
names another device, SYSCTL's `/` made `.`) that the stand-in does not meet. A device
with parents, a network interface (its NAME) and one known only by its subsystem are
evaluated as usual. `tests/test_udev_shared.py` holds the two paths to each other on
random rule sets.
"""

from __future__ import annotations

from .._lazyre import lazy
from .udev import UdevDevice, UdevOutcome, evaluate
from .udev_records import Ignored

TYPE_CHECKING = False  # typing costs ~3 ms of start-up: docs/architecture.md#start-up-cost
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any, Callable

    from .udev_files import RulesFile

STAND_IN = "\0name\0"
_SHAREABLE_NAME = lazy(r"[A-Za-z0-9:._+@!-]+")
_ATTR, _PROGRAM, _TEST = 0, 1, 2  # the device's callbacks a template records
_NAMED = ("KERNEL", "DEVPATH")  # the values that hold the name


class SharedOutcomes:
    """udev.evaluate(files, dev) for many devices of a few kinds (module docstring). The
    outcomes it gives may be one object for many devices: read them, do not change them."""
    __slots__ = ("files", "_templates", "_usable")

    def __init__(self, files: list[RulesFile]):
        self.files = files
        self._templates: dict[tuple, _Template | None] = {}
        self._usable = bool(files) and not any("\0" in f.text for f in files)

    def evaluate(self, dev: UdevDevice) -> UdevOutcome:
        key = self._kind(dev)
        if key is None:
            return evaluate(self.files, dev)
        if key in self._templates:
            template = self._templates[key]
        else:
            template = self._templates[key] = _template(self.files, dev, key[0])
        out = None if template is None else template.instance(dev)
        return evaluate(self.files, dev) if out is None else out

    def _kind(self, dev: UdevDevice) -> tuple | None:
        """What the rules may see of a device besides its name, or None: not shared."""
        values = dev.values
        kernel = values.get("KERNEL")
        if (not kernel or dev.levels or dev.unknown_matches or not self._usable or values.get("SUBSYSTEM") == "net"
                or not _SHAREABLE_NAME.fullmatch(kernel)):
            return None
        devpath = values.get("DEVPATH")
        prefix = None
        if devpath is not None:
            if not devpath.endswith(kernel):
                return None
            prefix = devpath[:-len(kernel)]
        return (prefix, dev.action, dev.has_devnode, tuple([kv for kv in values.items() if kv[0] not in _NAMED]))


class _Template:
    """One kind's evaluation with the stand-in name: its outcome, the questions about the
    name that decided its path (KERNEL or DEVPATH, test, answer: the engine's trace) and the
    questions it asked of the device (callback, argument with the stand-in, answer), in order."""
    __slots__ = ("outcome", "about_name", "queries", "plain")

    def __init__(self, outcome: UdevOutcome, about_name: tuple[tuple[str, Callable[[str], object], object], ...],
                 queries: tuple[tuple[int, str, object], ...]):
        self.outcome = outcome
        self.about_name = about_name
        self.queries = queries
        self.plain = not any("\0" in s for s in _strings(outcome))  # the stand-in is nowhere in it

    def instance(self, dev: UdevDevice) -> UdevOutcome | None:
        """The outcome for `dev`, or None when its answers are not the template's."""
        kernel = dev.values["KERNEL"] or ""  # never empty: SharedOutcomes._kind()
        devpath = dev.values.get("DEVPATH") or ""
        for value, test, answer in self.about_name:
            if test(kernel if value == "KERNEL" else devpath) != answer:
                return None
        asked: tuple[Callable[[str], object], ...] = (dev.attr, dev.program, dev.test)
        for callback, argument, answer in self.queries:
            if asked[callback](argument.replace(STAND_IN, kernel)) != answer:
                return None
        return self.outcome if self.plain else _named(self.outcome, kernel)


def _template(files: list[RulesFile], dev: UdevDevice, prefix: str | None) -> _Template | None:
    kernel = dev.values["KERNEL"] or ""  # never empty: SharedOutcomes._kind()
    queries: list[tuple[int, str, object]] = []

    def recorded(which: int, real: Callable[[str], Any]) -> Callable[[str], Any]:
        def ask(argument: str) -> Any:
            answer = real(argument.replace(STAND_IN, kernel))
            queries.append((which, argument, answer))
            return answer
        return ask

    if prefix is not None and "\0" in prefix or any(v is not None and "\0" in v for v in dev.values.values()):
        return None  # the stand-in must be the only NUL (a kind's values are all in its key)
    values = dict(dev.values)
    values["KERNEL"] = STAND_IN
    if prefix is not None:
        values["DEVPATH"] = prefix + STAND_IN
    stand_in = UdevDevice(values, recorded(_ATTR, dev.attr), (), False, dev.action, recorded(_PROGRAM, dev.program),
                          recorded(_TEST, dev.test), dev.has_devnode)
    trace: list = []
    out = evaluate(files, stand_in, trace=trace)
    if any(why.__class__ is str for why in trace):
        return None  # the outcome depends on the name in a way not asked again (udev.evaluate's trace)
    return _Template(out, tuple(trace), tuple(queries))


def _strings(o: UdevOutcome) -> Iterator[str]:
    for entries in (o.run, o.builtins):
        yield from (e[0] for e in entries)
    for table in (o.attrs, o.sysctls):
        for k, (value, _source, _line) in table.items():
            yield k
            yield value
    yield from o.env.values()
    yield from o.assumed
    yield from o.tags
    yield from o.devlinks
    yield from o.notes
    if o.name is not None:
        yield o.name
    for i in o.ignored:
        yield from i.run
        for a, v in i.attrs:
            yield a
            yield v


def _named(o: UdevOutcome, kernel: str) -> UdevOutcome | None:
    """The template's outcome with `kernel` for the stand-in, or None when that makes two
    entries one (udev would have kept one of them: the device is evaluated as usual)."""
    def put(text: str) -> str:
        return text.replace(STAND_IN, kernel)

    run = [(put(p), source, line) for p, source, line in o.run]
    builtins = [(put(p), source, line) for p, source, line in o.builtins]
    attrs = {put(k): (put(v), source, line) for k, (v, source, line) in o.attrs.items()}
    sysctls = {put(k): (put(v), source, line) for k, (v, source, line) in o.sysctls.items()}
    tags, devlinks = [put(t) for t in o.tags], [put(link) for link in o.devlinks]
    if (len({e[0] for e in run}) < len(run) or len({e[0] for e in builtins}) < len(builtins)
            or len(attrs) < len(o.attrs) or len(sysctls) < len(o.sysctls)
            or len(set(tags)) < len(tags) or len(set(devlinks)) < len(devlinks)):
        return None
    ignored = [Ignored(i.source, i.line, i.problem, tuple(map(put, i.run)), tuple((put(a), put(v)) for a, v in i.attrs))
               for i in o.ignored]
    return UdevOutcome(run, attrs, {k: put(v) for k, v in o.env.items()}, {put(a) for a in o.assumed}, builtins,
                       sysctls, tags, devlinks, None if o.name is None else put(o.name), ignored,
                       [put(n) for n in o.notes])
