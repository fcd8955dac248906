"""The package's import graph: no cycle between modules, and no package importing one from a
layer above it (docs/architecture.md, "Which package may import which").

The graph is read with `ast`, so it holds every import a module can make: module-level ones,
function-local ones (start-up cost keeps many imports local) and `if TYPE_CHECKING:` ones.
A local import still couples the two modules; hiding a cycle in a function only delays it.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "exporter" / "tunewatch"

# Bottom to top: a package may import its own modules and those of the layers below it.
# "" is the package's own top-level modules (__init__, errors, _record, _lazyre, ...); a
# top-level module that is not in BASE below is placed by TOP_LEVEL.
LAYERS = (
    "",          # errors, _record, _lazyre, _escape, the version: imported by everything
    "parsers",   # text -> records; pure functions of a file's text
    "host",      # reading files under a root without hanging on network mounts
    "facts",     # one reader per fact source: host files -> parsed facts
    "results",   # the records a scan produces (results.py)
    "kinds",     # one module per check kind: facts -> results
    "content",   # YAML checks, profiles, tailoring, waivers
    "scan",      # the engine running a profile's checks; collect (snapshots)
    "remediate",  # fixes planned from a scan's results
    "outputs",   # renderers of a scan's results (text, json, prometheus, xccdf, goss, ...)
    "web",       # the HTTP server (exporter-toolkit equivalent): imports only the base, see below
    "serve",     # the exporter: scan loop, scan job, exposition
    "vsphere",   # VMX/ESXi facts from vCenter and central mode, built on serve's scan job
    "cli",       # argument parsers and commands
    "__main__",  # python -m tunewatch
)
# Top-level modules that are layers of their own (the rest belong to the base "").
TOP_LEVEL = {"tunewatch.results": "results", "tunewatch.__main__": "__main__"}
# web is the exporter-toolkit equivalent: it must stay usable without the scanner.
STANDALONE = {"web": {""}}


def _module_name(path: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts.pop()
    return ".".join(parts), is_package


def _imports(path: Path, name: str, is_package: bool) -> set[str]:
    """Every tunewatch module or name `path` imports, anywhere in the file."""
    found: set[str] = set()
    here = name.split(".") if is_package else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)  # `from . import engine`
    return {m for m in found if m == "tunewatch" or m.startswith("tunewatch.")}


def import_graph() -> dict[str, set[str]]:
    """module -> the package's modules it imports (an imported name resolves to its module)."""
    raw = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name, is_package = _module_name(path)
        raw[name] = _imports(path, name, is_package)
    graph: dict[str, set[str]] = {}
    for name, imported in raw.items():
        graph[name] = set()
        for target in imported:
            while target not in raw and "." in target:
                target = target.rsplit(".", 1)[0]
            if target != name:
                graph[name].add(target)
    return graph


def layer(module: str) -> str:
    if module in TOP_LEVEL:
        return TOP_LEVEL[module]
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and (PACKAGE / parts[1]).is_dir()) else ""


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_every_package_has_a_layer():
    packages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert packages <= set(LAYERS), f"add the new package to LAYERS: {sorted(packages - set(LAYERS))}"


def test_no_import_cycle():
    found = cycles(import_graph())
    assert not found, "import cycles (a function-local or TYPE_CHECKING import counts too):\n" + \
        "\n".join(" <-> ".join(c) for c in found)


def test_no_import_from_a_higher_layer():
    rank = {name: i for i, name in enumerate(LAYERS)}
    upward = []
    for module, imported in sorted(import_graph().items()):
        for target in sorted(imported):
            if rank[layer(target)] > rank[layer(module)]:
                upward.append(f"{module} ({layer(module) or 'base'}) imports {target} ({layer(target)})")
    assert not upward, "imports from a higher layer:\n" + "\n".join(upward)


def test_standalone_packages_import_only_the_base():
    wrong = []
    for module, imported in sorted(import_graph().items()):
        allowed = STANDALONE.get(layer(module))
        if allowed is None:
            continue
        wrong += [f"{module} imports {target}" for target in sorted(imported)
                  if layer(target) != layer(module) and layer(target) not in allowed]
    assert not wrong, "web imports nothing of the scanner:\n" + "\n".join(wrong)


def test_the_graph_sees_local_and_type_checking_imports():
    """The reader itself: a local import and a TYPE_CHECKING one are edges."""
    graph = import_graph()
    assert "tunewatch.serve.options" in graph["tunewatch.cli.main"]  # imported inside a function
    assert "tunewatch.content.waivers" in graph["tunewatch.content.catalog"]  # under TYPE_CHECKING
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
