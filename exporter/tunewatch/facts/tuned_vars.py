"""tuned's variables and assignment modifiers: the value a [sysctl] or [vm] option writes.

redhat-performance/tuned (2bfa442, 2.28.0-rc.1):
- loader.py `_load_config_data()`: `${i:PROFILE_DIR}` (not after a `\\`) becomes the
  profile's directory in every option, when the file is read.
- merger.py `_merge_two()`: a unit of type `variables` (the `[variables]` section) merges
  into the profile's variables, in the order the profiles merge: `replace=1` drops the
  older ones; a redefined name keeps its place, a new one goes to the end (to the front
  with `prepend=1`).
- variables.py `add_from_cfg()`, in that order: `include=FILE` reads more variables from
  FILE (its options, as if under a section header; a missing or unparsable file adds
  none); any other name (`\\w+`, else refused) is defined, its value expanded with the
  variables defined before it.
- variables.py `expand()`: every `${name}` not after a `\\` is replaced in one pass by a
  defined variable's value (an undefined one stays as written); `\\${name}` becomes
  `${name}`. Then `${f:function:args}` runs one of tuned's functions
  (functions/parser.py), which a scanner does not run: such a value cannot be told.
- plugin_sysctl.py `_instance_apply_static()`: a [sysctl] value is unquoted (`"v"` -> `v`,
  commands.py `unquote()`) and then expanded; [vm] options are expanded (plugins/base.py
  `_execute_all_non_device_commands()`).
- plugins/base.py `_process_assignment_modifiers()`: `>N` writes N only when N is greater
  than the current value, `<N` only when it is smaller; when the two do not both read as
  integers, the value is written as given, `>` included (the kernel then refuses it).
"""

from __future__ import annotations

import os

from .._lazyre import lazy
from ..errors import ParseError, TunewatchError
from ..host.fs import FS

_PROFILE_DIR = lazy(r"(?<!\\)\$\{i:PROFILE_DIR\}")
_VARIABLE = lazy(r"(?<!\\)\$\{(\w+)\}")
_ESCAPED_VARIABLE = lazy(r"\\(\$\{\w+\})")
_FUNCTION = lazy(r"(?<!\\)\$\{f:")
_NAME = lazy(r"\w+$")
_QUOTED = lazy(r'^"(.*)"$')
# the options tuned's Unit takes out of every section: they steer the unit (unit.py `Unit.__init__`)
UNIT_CONTROL = ("priority", "type", "enabled", "replace", "prepend", "drop", "devices", "devices_udev_regex",
                 "cpuinfo_regex", "uname_regex", "script_pre", "script_post")
TRUE = ("True", "true", "1")  # unit.py: `config.pop("enabled", True) in [True, "True", "true", 1, "1"]`


def with_profile_dir(value: str, rel: str) -> str:
    """`${i:PROFILE_DIR}` of the profile file `rel` (root-relative), as tuned reads it."""
    directory = "/" + os.path.dirname(rel)
    return _PROFILE_DIR.sub(lambda _m: directory, value)


def unquote(value: str) -> str:
    return _QUOTED.sub(r"\1", value)


def calls_function(value: str) -> bool:
    """The expanded value still holds `${f:...}`: tuned runs a function there."""
    return _FUNCTION.search(value) is not None


class TunedVariables:
    """The merged profile's variables, defined in tuned's order (module docstring)."""
    __slots__ = ("values",)

    def __init__(self) -> None:
        self.values: dict[str, str] = {}

    def expand(self, value: str) -> str:
        """expand_static(): the variables in, escapes out; functions are left as written."""
        if "$" not in value:
            return value
        replaced = _VARIABLE.sub(lambda m: self.values.get(m.group(1), m.group(0)), value)
        return _ESCAPED_VARIABLE.sub(r"\1", replaced)

    def define(self, name: str, value: str | None) -> None:
        if value is not None and _NAME.match(name):
            self.values[name] = self.expand(value)


def profile_variables(fs: FS, loaded: list[tuple[str, str, dict[str, dict[str, str]]]]) -> TunedVariables:
    """The variables of the profiles in `loaded` (name, file, sections), in merge order."""
    merged: dict[str, str] = {}
    for _name, _rel, sections in loaded:
        for unit, options in sections.items():
            if unit == "main" or options.get("type", unit) != "variables":
                continue
            given = {k: v for k, v in options.items() if k not in UNIT_CONTROL}
            if options.get("replace", "0") in TRUE:
                merged.clear()
            redefined = set(merged) & set(given)
            merged.update(given)
            if options.get("prepend", "0") in TRUE:
                new = [k for k in given if k not in redefined]
                merged = {**{k: merged[k] for k in new}, **{k: v for k, v in merged.items() if k not in new}}
    variables = TunedVariables()
    for name, value in merged.items():
        if name == "include":
            for file_name, file_value in _variables_file(fs, value):
                variables.define(file_name, file_value)
        else:
            variables.define(name, value)
    return variables


def variables_files(fs: FS, profile_files: list[str]) -> list[str]:
    """The variables files that the profiles `profile_files` include (for `collect`);
    a profile that does not parse includes none."""
    from ..parsers.tuned_conf import parse_tuned_conf  # only a host with tuned profiles (start-up cost)

    out = []
    for rel in profile_files:
        try:
            sections = parse_tuned_conf(fs.read_text(rel) or "", rel)
        except (ParseError, TunewatchError):
            continue
        for unit, options in sections.items():
            if unit != "main" and options.get("type", unit) == "variables" and options.get("include"):
                out.append(os.path.normpath(with_profile_dir(options["include"], rel)).lstrip("/"))
    return out


def _variables_file(fs: FS, path: str) -> list[tuple[str, str | None]]:
    """variables.py `add_from_file()`: every option of the file, in order; none when it is
    missing or does not parse (tuned logs the error and goes on)."""
    from ..parsers.tuned_conf import parse_variables_file  # only a profile that includes one (start-up cost)

    rel = os.path.normpath(path).lstrip("/")
    text = fs.read_text(rel)
    if text is None:
        return []
    try:
        return parse_variables_file(text, rel)
    except ParseError:
        return []


def assigned(value: str, current: str) -> str | None:
    """_process_assignment_modifiers(): what tuned writes for `value` when the key holds
    `current` (None: nothing). At boot tuned reads the current value first and sets
    nothing when that read fails, so the caller knows `current` or cannot tell."""
    if len(value) <= 1 or value[0] not in "<>":
        return value
    op, number = value[0], value[1:]
    try:
        wanted, now = int(number), int(current)
    except ValueError:
        return value
    if (wanted > now) if op == ">" else (wanted < now):
        return number
    return None
