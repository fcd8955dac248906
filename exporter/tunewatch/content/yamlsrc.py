"""YAML documents that remember where each value came from.

Content errors must name the file, the line and the JSON pointer (`/vars/max_queues`), so
every document is loaded together with a map from JSON pointer to line number.

Content and user files (checks, profiles, tailoring, waivers) are small, hand-written
YAML, so anything far beyond that is refused before it costs time or memory: a file over
MAX_BYTES, a FIFO or a device (only regular files are read), nesting deeper than
MAX_DEPTH (a RecursionError otherwise), more than MAX_ALIASES aliases, and a document
whose alias-expanded tree has more than MAX_NODES nodes (the "billion laughs" bomb).
PyYAML and jsonschema are imported only when a file is really parsed or validated (the
schemas through `load_schemas`): a scan whose content cache is valid never loads them.
"""

from __future__ import annotations

import os

from .._record import Record
from ..errors import ContentError, FactError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from jsonschema.protocols import Validator
    from yaml import Node

MAX_BYTES = 2 << 20
MAX_DEPTH = 64
MAX_ALIASES = 1000
MAX_NODES = 50_000


class Document(Record):
    __slots__ = ("path", "data", "lines")
    path: str
    data: Any  # schema-validated YAML
    lines: dict[str, int]  # JSON pointer -> 1-based line

    def __init__(self, path: str, data: Any, lines: dict[str, int]):
        self.path = path
        self.data = data
        self.lines = lines

    def line(self, pointer: str) -> int | None:
        """Line of `pointer`, or of its nearest ancestor that has one."""
        while True:
            if pointer in self.lines:
                return self.lines[pointer]
            if not pointer:
                return None
            pointer = pointer.rsplit("/", 1)[0]

    def error(self, message: str, pointer: str = "") -> ContentError:
        return ContentError(self.path, message, self.line(pointer), pointer or "/")


def pointer_of(path: Iterable[str | int]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


class _Budget:
    """Nodes left for the alias-expanded tree."""

    def __init__(self, path: str):
        self.path, self.left = path, MAX_NODES

    def spend(self, node: Node) -> None:
        self.left -= 1
        if self.left < 0:
            raise ContentError(self.path, f"document expands to more than {MAX_NODES} YAML nodes (aliases "
                                          "repeated over and over?); content files are small", node.start_mark.line + 1)


def _walk(node: Node, pointer: str, lines: dict[str, int], path: str, budget: _Budget,
          pointers: dict[int, str]) -> None:
    import yaml

    budget.spend(node)
    lines[pointer] = node.start_mark.line + 1
    pointers[id(node)] = pointer
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = str(key_node.value)
            child = pointer + "/" + key.replace("~", "~0").replace("/", "~1")
            if key in seen:
                raise ContentError(path, f"duplicate key {key!r}", key_node.start_mark.line + 1, child)
            seen.add(key)
            _walk(value_node, child, lines, path, budget, pointers)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _walk(item, f"{pointer}/{i}", lines, path, budget, pointers)


class _UnbuildableValue(Exception):
    """A scalar PyYAML parsed but cannot build (the date 2026-02-30), with its node."""

    def __init__(self, node: Node, error: ValueError):
        super().__init__(str(error))
        self.node, self.error = node, error


_LOADER = None


def _loader_class():
    """SafeLoader that refuses deep nesting and many aliases while composing, before
    anything is built (the C loader composes in C, out of reach of these limits)."""
    global _LOADER
    if _LOADER is None:
        import yaml

        class BoundedLoader(yaml.SafeLoader):
            path = ""
            _depth = _aliases = 0

            def compose_node(self, parent, index):
                line = self.peek_event().start_mark.line + 1
                if self.check_event(yaml.AliasEvent):
                    self._aliases += 1
                    if self._aliases > MAX_ALIASES:
                        raise ContentError(self.path, f"more than {MAX_ALIASES} YAML aliases", line)
                self._depth += 1
                if self._depth > MAX_DEPTH:
                    raise ContentError(self.path, f"nested deeper than {MAX_DEPTH} levels", line)
                try:
                    return super().compose_node(parent, index)
                finally:
                    self._depth -= 1

            def construct_object(self, node, deep=False):
                try:
                    return super().construct_object(node, deep)
                except ValueError as e:  # the innermost node that failed (not a ValueError itself
                    raise _UnbuildableValue(node, e) from e  # once wrapped): its line and pointer

        _LOADER = BoundedLoader
    return _LOADER


def read_content_file(path: str) -> str:
    """A content or user file's text: a regular file of at most MAX_BYTES, UTF-8."""
    from ..host.fs import read_regular_file

    try:
        data = read_regular_file(path, MAX_BYTES)
    except OSError as e:
        raise ContentError(path, f"cannot read: {e.strerror or e}") from e
    except FactError as e:
        reason = str(e).replace(f"cannot read {path}: ", "")
        if "larger than" in reason:
            reason = f"larger than {MAX_BYTES >> 20} MiB; content and user files are small"
        raise ContentError(path, f"cannot read: {reason}") from e
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ContentError(path, f"not UTF-8 text ({e.reason})") from e
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def load_yaml(path: str, text: str | None = None) -> Document:
    import yaml

    if text is None:
        text = read_content_file(path)
    elif len(text) > MAX_BYTES:
        raise ContentError(path, f"cannot read: larger than {MAX_BYTES >> 20} MiB; content and user files are small")
    loader = _loader_class()(text)
    loader.path = path
    try:
        node = loader.get_single_node()
        lines: dict[str, int] = {}
        pointers: dict[int, str] = {}  # id(node) -> its JSON pointer, to name a value that cannot be built
        if node is not None:
            _walk(node, "", lines, path, _Budget(path), pointers)
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark else None
        raise ContentError(path, f"YAML syntax error: {e.problem or e}", line) from e
    except yaml.YAMLError as e:
        raise ContentError(path, f"YAML error: {e}") from e
    except _UnbuildableValue as e:  # a scalar PyYAML cannot construct, such as the date 2026-02-30
        raise ContentError(path, f"YAML value error: {e.error}", e.node.start_mark.line + 1,
                           pointers.get(id(e.node), "")) from e.error
    except ValueError as e:
        raise ContentError(path, f"YAML value error: {e}") from e
    finally:
        loader.dispose()
    return Document(path, data, lines)


def validate(doc: Document, validator: Validator, base_pointer: str = "", data: Any = None) -> None:
    """Raise the most relevant schema violation as a ContentError."""
    import jsonschema

    errors = sorted(validator.iter_errors(doc.data if data is None else data),
                    key=lambda e: (len(list(e.absolute_path)), str(e.message)))
    if errors:
        best = jsonschema.exceptions.best_match(errors) or errors[0]
        path = list(best.absolute_path)
        if best.validator == "additionalProperties" and isinstance(best.instance, dict):
            extra = [k for k in best.instance if k not in best.schema.get("properties", {})]
            path += extra[:1]  # name the unexpected key, not its parent
        pointer = base_pointer + pointer_of(path)
        raise doc.error(f"schema violation: {best.message}", pointer)


def load_schemas(schema_dir: str) -> dict:
    """A Draft 2020-12 validator per schema file of `schema_dir` (`check.json` -> "check"),
    each able to refer to the others by their `$id`."""
    import json

    import jsonschema
    from referencing import Registry, Resource

    from ..host.fs import read_regular_file

    resources, schemas = [], {}
    for name in sorted(os.listdir(schema_dir)):
        path = os.path.join(schema_dir, name)
        try:
            schema = json.loads(read_regular_file(path, MAX_BYTES))
        except (OSError, FactError, ValueError, RecursionError) as e:
            raise ContentError(path, f"schema is not readable JSON: {e}") from e
        if not isinstance(schema, dict) or not isinstance(schema.get("$id"), str):
            raise ContentError(path, "schema has no \"$id\" (a URI naming it, for example "
                                     "\"https://tunewatch.dev/schema/check.json\"): other schemas cannot refer to it")
        resources.append((schema["$id"], Resource.from_contents(schema)))
        schemas[name.split(".")[0]] = schema
    registry = Registry().with_resources(resources)
    return {kind: jsonschema.Draft202012Validator(schema, registry=registry, format_checker=jsonschema.FormatChecker())
            for kind, schema in schemas.items()}
