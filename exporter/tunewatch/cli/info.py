"""The commands that describe rather than scan: checks, profiles, validate-content, paths
and completion. cli.py loads this module only for them, so a scan does not (docs/architecture.md#start-up-cost)."""

from __future__ import annotations

import argparse
import os
import sys

from ..content.catalog import SHIPPED, Content, shipped_dir
from ..content.references import cite
from ..errors import ContentError, did_you_mean

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace
    from collections.abc import Iterator


def cmd_checks(args: Namespace) -> int:
    import textwrap

    content = Content(args.content)
    for cid in args.ids:
        if cid not in content.checks:
            raise ContentError("checks", f"unknown check id {cid!r}{did_you_mean(cid, content.checks)}"
                                         " (see `tunewatch checks`)")
    if not args.ids:
        for c in content.checks.values():
            print(f"{c.id:32} {c.severity:6} {c.title}")
        return 0
    for cid in args.ids:
        c = content.checks[cid]
        print(f"{c.id}: {c.title}\n  severity: {c.severity}   kind: {c.kind}   file: {c.doc.path}")
        print(textwrap.indent(textwrap.fill(c.description, 88), "  "))
        if args.verbose:
            print("  rationale:\n" + textwrap.indent(textwrap.fill(c.rationale, 86), "    "))
            if c.vars:
                print("  default parameters:")
                for k, v in c.vars.items():
                    print(f"    {k}: {v}")
            print("  references:")
            for ref in c.references:
                print(f"    - {cite(ref)}" + (f"\n      {ref['url']}" if ref.get("url") else ""))
        print()
    return 0


def cmd_profiles(args: Namespace) -> int:
    import textwrap

    content = Content(args.content)
    if not args.ids:
        for p in content.profiles.values():
            resolved = content.resolve(p.id)
            print(f"{p.id:22} {len(resolved.checks):3} checks  {p.title}")
        return 0
    for pid in args.ids:
        if pid not in content.profiles:
            raise ContentError("profiles", f"unknown profile {pid!r}{did_you_mean(pid, content.profiles)}"
                                           " (see `tunewatch profiles`)")
        resolved = content.resolve(pid)
        p = content.profiles[pid]
        print(f"{pid}: {p.title}" + (f" (extends {p.extends})" if p.extends else ""))
        print(textwrap.indent(textwrap.fill(p.description, 88), "  "))
        for sel in resolved.checks:
            own = content.checks[sel.check.id].vars
            changed = {k: v for k, v in sel.vars.items() if own.get(k) != v}
            print(f"  - {sel.check.id}" + (f"  {changed}" if changed else ""))
        print()
    return 0


def cmd_validate(args: Namespace) -> int:
    content = Content(args.content)
    if args.tailoring:
        content.load_tailoring(args.tailoring)
    if args.waivers:
        content.load_waivers(args.waivers)
    print(f"content OK: {len(content.checks)} checks, {len(content.profiles)} profiles ({content.directory}, "
          f"digest {content.digest})")
    return 0


def cmd_paths(args: Namespace) -> int:
    """Where this tunewatch finds its content and the files that go with it (checkout or package)."""
    names = args.names or [n for n in SHIPPED if shipped_dir(n)]
    for name in names:
        if name not in SHIPPED:
            raise ContentError("paths", f"unknown name {name!r}{did_you_mean(name, SHIPPED)}"
                                        f" (known: {', '.join(SHIPPED)})")
        found = os.environ.get("TUNEWATCH_CONTENT") if name == "checks" else None
        found = found or shipped_dir(name)
        if found is None:
            raise ContentError(name, "not shipped with this installation")
        print(found if args.names else f"{name:11} {found}")
    docs = shipped_dir("docs")
    if not args.names and docs:
        print(f"{'runbook':11} {os.path.join(docs, 'runbook.md')}")
    return 0


def cmd_completion(args: Namespace) -> int:
    """Static completion script by shtab; profile and check ids are listed from the content."""
    try:
        import shtab
    except ImportError as e:
        raise ContentError("completion", "needs the shtab package: pip install shtab") from e
    parser = args.build_parser()  # main's, passed in so that info does not import main
    content = Content(args.content)
    for action in _all_actions(parser):
        if action.dest == "profile":
            action.choices = sorted(content.profiles)
        elif action.dest in ("rule", "skip_rule") or (action.dest == "ids" and action.metavar == "CHECK"):
            action.choices = sorted(content.checks)
        elif action.dest == "ids" and action.metavar == "PROFILE":
            action.choices = sorted(content.profiles)
    sys.stdout.write(shtab.complete(parser, shell=args.shell))
    return 0


def _all_actions(parser: argparse.ArgumentParser) -> Iterator[argparse.Action]:
    for action in parser._actions:
        yield action
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _all_actions(sub)
