"""The udev rules files the next boot reads (systemd `udev_rules_load()`,
`conf_files_list_strv(".rules")`, `udev_rules_parse_file()`), parsed once per scan.

Directories /etc, /run, /usr/local/lib, /usr/lib and /lib `udev/rules.d` are merged by file
name (the first directory wins for a name) and read in lexical order of names; /run is a
tmpfs emptied at every boot, so it takes no part in the prediction. Only names ending in
`.rules`, not starting with `.`; a file that is empty or a link to /dev/null masks its name
("Skipping empty file"); a dangling link is skipped ("Failed to open ..., ignoring").
An unreadable file raises (FactError): the only udev file that makes a check `error`.
"""

from __future__ import annotations

from .._record import FrozenRecord
from ..host.fs import FS

TYPE_CHECKING = False  # typing costs ~3 ms of start-up: docs/architecture.md#start-up-cost
if TYPE_CHECKING:  # the parser loads with the first rules file (_read_rules)
    from ..parsers.udev_rules import ParseMemo, UdevRule

# not run/udev/rules.d, which udev reads too: it is gone at the next boot
RULES_DIRS = ("etc/udev/rules.d", "usr/local/lib/udev/rules.d", "usr/lib/udev/rules.d", "lib/udev/rules.d")


class RulesFile(FrozenRecord):
    __slots__ = ("source", "rules", "problem", "text", "plan")
    _norepr = ("plan",)
    source: str
    rules: tuple[UdevRule, ...]  # dropped lines included, with their `problem`
    problem: str | None  # set: udev ignores the whole file
    text: str  # kept so boot_scripts() need not read the file again
    plan: object  # facts.udev_plan.Plan, compiled at the first evaluation: not part of the value

    def __init__(self, source: str, rules: tuple[UdevRule, ...], problem: str | None = None, text: str = ""):
        self.source = source
        self.rules = rules
        self.problem = problem
        self.text = text
        self.plan = None

    def _fields(self) -> tuple:
        return (self.source, self.rules, self.problem, self.text)


def rules_files(fs: FS, dirs: tuple[str, ...] = RULES_DIRS) -> list[str]:
    """conf_files_list(): `*.rules`, not hidden, merged by name, masks dropped."""
    chosen: dict[str, str] = {}
    for d in dirs:
        for rel in fs.glob(d, "*.rules"):
            name = rel.rsplit("/", 1)[1]
            if not name.startswith("."):
                chosen.setdefault(name, rel)
    return [chosen[n] for n in sorted(chosen)]


def read_rules(fs: FS) -> list[RulesFile]:
    """The rules the next boot reads, parsed once per FS (one scan); each file's compiled
    plan (facts/udev_plan.py) is kept with it, so it too is made once per scan."""
    return fs.derived(read_rules, lambda: _read_rules(fs))


def _read_rules(fs: FS) -> list[RulesFile]:
    files: list[RulesFile] = []
    memo: ParseMemo | None = None  # the files of one scan share their repeated lines and tokens
    for rel in rules_files(fs):
        if fs.readlink(rel) == "/dev/null":
            continue  # masked
        text = fs.read_text(rel)
        if not text:
            continue  # None: a dangling link ("Failed to open ..., ignoring"); "": an empty file masks the name
        if memo is None:  # the first file: a host without rules never loads the parser
            from ..parsers.udev_rules import ParseMemo, parse_udev_rules_file

            memo = ParseMemo()
        parsed = parse_udev_rules_file(text, memo)
        files.append(RulesFile(rel, parsed.rules, parsed.file_problem, text))
    return files
