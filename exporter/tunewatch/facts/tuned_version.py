"""The installed tuned's version: its Python package's tuned/version.py, read as text.

Upstream writes it as three assignments (tuned/version.py):

    TUNED_VERSION_MAJOR = 2
    TUNED_VERSION_MINOR = 26
    TUNED_VERSION_PATCH = 0

and installs the package where the distribution's Python finds it (content,
checks/layouts/tuned.yaml `version_files`). What depends on it: plugin_vm.py has the
dirty_* options from 2.25 (before, plugins/base.py `_get_effective_options()` warns
"Unknown option" and drops them) and takes `dirty_bytes = N%` from 2.26
(facts/tuned.vm_dirty_option). The file is never run: a line that is not one of the three
plain assignments is not read.
"""

from __future__ import annotations

from .._lazyre import lazy
from .._record import FrozenRecord
from ..errors import FactError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..host.fs import FS

_ASSIGNMENT = lazy(r"TUNED_VERSION_(MAJOR|MINOR|PATCH)[ \t]*=[ \t]*([0-9]{1,6})[ \t]*(?:#.*)?")


class TunedVersion(FrozenRecord):
    __slots__ = ("version", "source")
    version: tuple[int, int, int] | None  # None: not known here (source says why)
    source: str  # the file read, or why the version is not known

    def __init__(self, version: tuple[int, int, int] | None, source: str):
        self.version = version
        self.source = source


def version_text(version: tuple[int, int, int]) -> str:
    return ".".join(map(str, version))


def parse_version(text: str) -> tuple[int, int, int] | None:
    """(major, minor, patch) of a tuned/version.py, or None when one of them is missing."""
    parts: dict[str, int] = {}
    for line in text.split("\n"):
        m = _ASSIGNMENT.fullmatch(line.strip())
        if m is not None:
            parts[m.group(1)] = int(m.group(2))
    if len(parts) != 3:
        return None
    return parts["MAJOR"], parts["MINOR"], parts["PATCH"]


def version_file_matches(fs: FS, pattern: str) -> list[str]:
    """Root-relative paths of `pattern` (a component may hold `*`), each directory on the way
    listed or tested once through `fs`; the last may not exist (a read says so)."""
    found = [""]
    parts = pattern.strip("/").split("/")
    for n, part in enumerate(parts):
        last = n == len(parts) - 1
        if "*" in part:
            found = [rel.lstrip("/") for d in found for rel in fs.glob(d, part)]  # "" is the root
        else:
            found = [f"{d}/{part}" if d else part for d in found]
        if not last:
            found = [d for d in found if fs.is_dir(d)]
    return found


def read_tuned_version(fs: FS, layouts: dict | None) -> TunedVersion:
    """The version of the tuned installed under `fs`. Unknown (None) when no file is found,
    one cannot be read or says no version, or two installs disagree: the callers then
    say which writes depend on it, never a version's behaviour."""
    spec = (layouts or {}).get("version_files") or {}
    patterns = spec.get("paths") or []
    if not patterns:
        return TunedVersion(None, "tuned's version: content names no tuned/version.py (checks/layouts/tuned.yaml)")
    found: dict[str, tuple[int, int, int]] = {}
    problems: list[str] = []
    for pattern in patterns:
        try:
            paths = version_file_matches(fs, pattern)
        except FactError as e:
            problems.append(str(e))
            continue
        for rel in paths:
            try:
                text = fs.read_text(rel)
            except FactError as e:
                problems.append(str(e))
                continue
            if text is None:
                continue
            version = parse_version(text)
            if version is None:
                problems.append(f"{rel} has no TUNED_VERSION_MAJOR, _MINOR and _PATCH")
            else:
                found[rel] = version
    versions = set(found.values())
    if len(versions) == 1 and not problems:
        return TunedVersion(versions.pop(), next(iter(found)))
    if len(versions) > 1:
        said = "; ".join(f"{rel}: {version_text(v)}" for rel, v in found.items())
        return TunedVersion(None, f"tuned's version: two installs disagree ({said})")
    if problems:
        return TunedVersion(None, f"tuned's version: {'; '.join(problems)}")
    return TunedVersion(None, f"tuned's version: no tuned/version.py ({', '.join(patterns)})")
