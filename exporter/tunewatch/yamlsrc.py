"""YAML documents that remember where each value came from.

Content errors must name the file, the line and the JSON pointer (`/vars/max_queues`), so
every document is loaded together with a map from JSON pointer to line number.
"""

from __future__ import annotations

from dataclasses import dataclass

import jsonschema
import yaml

from .errors import ContentError


@dataclass
class Document:
    path: str
    data: object
    lines: dict[str, int]  # JSON pointer -> 1-based line

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


def pointer_of(path) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def _walk(node: yaml.Node, pointer: str, lines: dict[str, int], path: str) -> None:
    lines[pointer] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = str(key_node.value)
            child = pointer + "/" + key.replace("~", "~0").replace("/", "~1")
            if key in seen:
                raise ContentError(path, f"duplicate key {key!r}", key_node.start_mark.line + 1, child)
            seen.add(key)
            _walk(value_node, child, lines, path)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _walk(item, f"{pointer}/{i}", lines, path)


def load_yaml(path: str, text: str | None = None) -> Document:
    try:
        if text is None:
            with open(path, encoding="utf-8") as f:
                text = f.read()
    except OSError as e:
        raise ContentError(path, f"cannot read: {e.strerror or e}") from e
    except UnicodeDecodeError as e:
        raise ContentError(path, f"not UTF-8 text ({e.reason})") from e
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        lines: dict[str, int] = {}
        if node is not None:
            _walk(node, "", lines, path)
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark else None
        raise ContentError(path, f"YAML syntax error: {e.problem or e}", line) from e
    except yaml.YAMLError as e:
        raise ContentError(path, f"YAML error: {e}") from e
    finally:
        loader.dispose()
    return Document(path, data, lines)


def validate(doc: Document, validator: jsonschema.protocols.Validator, base_pointer: str = "", data=None) -> None:
    """Raise the most relevant schema violation as a ContentError."""
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
