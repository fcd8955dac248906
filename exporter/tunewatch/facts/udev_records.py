"""The records of a udev evaluation (facts/udev.py, which exports them): a device as
systemd-udevd sees it for an event (UdevDevice, Level: the device and its parents) and
what the rules do to it (UdevOutcome, Ignored)."""

from __future__ import annotations

from .._record import FrozenRecord, Record

TYPE_CHECKING = False  # typing itself costs ~3 ms of start-up (issue 22); annotations are strings
if TYPE_CHECKING:
    from typing import Callable, Optional

    ProgramResult = Optional[tuple[bool, Optional[str]]]  # (succeeded, stdout); None: cannot be told


def _no_attr(_name: str) -> str | None:
    return None


def _no_program(_cmd: str) -> ProgramResult:
    return None


def _no_test(_path: str) -> bool | None:
    return None


class Level(FrozenRecord):
    """The event device or one of its parents, as KERNELS/SUBSYSTEMS/DRIVERS/ATTRS see it.
    `attr` returns a sysfs attribute's value as sd_device_get_sysattr_value() does (None:
    no value: missing, a directory or a link other than driver/subsystem/module)."""
    __slots__ = ("kernel", "subsystem", "driver", "attr", "devpath")
    kernel: str | None
    subsystem: str | None
    driver: str | None
    attr: Callable[[str], str | None]
    devpath: str | None

    def __init__(self,
                 kernel: str | None, subsystem: str | None, driver: str | None,
                 attr: Callable[[str], str | None] = _no_attr, devpath: str | None = None):
        self.kernel = kernel
        self.subsystem = subsystem
        self.driver = driver
        self.attr = attr
        self.devpath = devpath


class UdevDevice(FrozenRecord):
    """`values`: KERNEL, NAME (the interface name for a net device), SUBSYSTEM, DRIVER,
    DEVPATH and the properties as ENV{x}; `attr` reads its ATTR{x}; `levels`: the device
    itself, then its parents (default: the device alone, from `values`)."""
    __slots__ = ("values", "attr", "levels", "unknown_matches", "action", "program", "test", "has_devnode")
    values: dict[str, str | None]
    attr: Callable[[str], str | None]
    levels: tuple[Level, ...]
    unknown_matches: bool  # a device known only by its subsystem: other keys match
    action: str
    program: Callable[[str], ProgramResult]
    test: Callable[[str], bool | None]  # TEST: does the path exist (None: cannot tell)
    has_devnode: bool  # SYMLINK assignments apply only to a device with a node

    def __init__(self,
                 values: dict[str, str | None], attr: Callable[[str], str | None] = _no_attr,
                 levels: tuple[Level, ...] = (), unknown_matches: bool = False, action: str = "add",
                 program: Callable[[str], ProgramResult] = _no_program,
                 test: Callable[[str], bool | None] = _no_test, has_devnode: bool = False):
        self.values = values
        self.attr = attr
        self.levels = levels
        self.unknown_matches = unknown_matches
        self.action = action
        self.program = program
        self.test = test
        self.has_devnode = has_devnode


class Ignored(FrozenRecord):
    """A line udev drops whose valid keys match the device: what it would have done."""
    __slots__ = ("source", "line", "problem", "run", "attrs")
    source: str
    line: int
    problem: str
    run: tuple[str, ...]
    attrs: tuple[tuple[str, str], ...]

    def __init__(self,
                 source: str, line: int, problem: str, run: tuple[str, ...] = (),
                 attrs: tuple[tuple[str, str], ...] = ()):
        self.source = source
        self.line = line
        self.problem = problem
        self.run = run
        self.attrs = attrs


class UdevOutcome(Record):
    __slots__ = ("run", "attrs", "env", "assumed", "builtins", "sysctls", "tags", "devlinks",
                 "name", "ignored", "notes")
    run: list[tuple[str, str, int]]  # (program, source, line), substituted
    attrs: dict[str, tuple[str, str, int]]  # attr -> (value, source, line)
    env: dict[str, str]  # ENV{x}= assignments (NM_UNMANAGED...)
    assumed: set[str]
    builtins: list[tuple[str, str, int]]  # RUN{builtin}
    sysctls: dict[str, tuple[str, str, int]]
    tags: list[str]
    devlinks: list[str]
    name: str | None
    ignored: list[Ignored]
    notes: list[str]  # e.g. GOTO without a label

    def __init__(self,
                 run: list[tuple[str, str, int]] | None = None, attrs: dict[str, tuple[str, str, int]] | None = None,
                 env: dict[str, str] | None = None, assumed: set[str] | None = None,
                 builtins: list[tuple[str, str, int]] | None = None,
                 sysctls: dict[str, tuple[str, str, int]] | None = None, tags: list[str] | None = None,
                 devlinks: list[str] | None = None, name: str | None = None, ignored: list[Ignored] | None = None,
                 notes: list[str] | None = None):
        self.run = [] if run is None else run
        self.attrs = {} if attrs is None else attrs
        self.env = {} if env is None else env
        self.assumed = set() if assumed is None else assumed
        self.builtins = [] if builtins is None else builtins
        self.sysctls = {} if sysctls is None else sysctls
        self.tags = [] if tags is None else tags
        self.devlinks = [] if devlinks is None else devlinks
        self.name = name
        self.ignored = [] if ignored is None else ignored
        self.notes = [] if notes is None else notes
