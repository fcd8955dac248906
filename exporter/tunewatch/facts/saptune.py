"""saptune (SUSE/saptune, version 3) as a boot-time sysctl consumer.

saptune.service (`After=systemd-sysctl.service ... tuned.service`, ExecStart `saptune
service apply`) applies the notes of `NOTE_APPLY_ORDER` in /etc/sysconfig/saptune, in
that order (app/app.go: "list of notes in applied order. Do NOT sort."), when it is
enabled. A note is /etc/saptune/extra/<id>.conf or /usr/share/saptune/notes/<id>; an
/etc/saptune/override/<id> file replaces its values, an empty value leaving the
parameter alone. Its `[sysctl]` sections write their keys; a section's tags must match
the host (txtparser/tags.go `chkSecTags()`): `os=15-SP5` (or `15-*`, `15-[4-6]`) against
the SLES release, `csp=azure|aws|google` against the platform. Sections with tags this
reader cannot judge (hardware, virtualisation, kernel) are skipped and named.
A key also set in a sysctl file is still written (saptune only footnotes it: actions/
footnote.go "[11] parameter is additional defined in SYSCTLLIST").
"""

from __future__ import annotations

import re

from ..errors import ParseError
from ..host.fs import FS
from ..parsers._text import lines
from ..parsers.shellvars import parse_shell_assignments
from .services import read_unit_state

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

    from .host import Host

SYSCONFIG = "etc/sysconfig/saptune"


def _os_release(version_id: str) -> str:
    """system.GetOsVers(): VERSION_ID 15.5 -> 15-SP5, 15 -> 15, 16.0 -> 16.0."""
    major, _, minor = version_id.partition(".")
    return f"{major}-SP{minor}" if major in ("12", "15") and minor and minor != "0" else version_id


def _os_matches(tag: str, running: str) -> bool:
    m = re.fullmatch(r"(.*)[-.]S?P?(\*)", tag)
    if m:
        return running.split("-")[0].split(".")[0] == m.group(1)
    m = re.fullmatch(r"(.*)[-.]\[(.*)\]", tag)
    if not m:
        return tag == running
    if running.split("-")[0] != m.group(1):
        return False
    sp = int(running.split("SP")[1]) if "SP" in running else 0
    for part in m.group(2).split(","):
        low, dash, high = part.partition("-")
        if (not dash and low.isdigit() and sp == int(low)) or \
                (dash and (not low or sp >= int(low)) and (not high or sp <= int(high))):
            return True
    return False


def _sections(text: str, source: str) -> Iterator[tuple[str, list[str], str, str, str]]:
    """(section name, tags, key, value, line) of every parameter line."""
    name, tags = "", []
    for n, line in lines(text):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            fields = line.strip("[]").split(":")
            name, tags = fields[0], [t for t in fields[1:] if t]
            continue
        key, sep, value = line.partition("=")
        if sep and key.strip():
            yield name, tags, key.strip(), value.strip(), f"{source}:{n}"


def read_saptune_writes(fs: FS, host: Host | None) -> tuple[list[tuple[str, str, str]], list[str]] | None:
    """(sysctl writes in order as (key, value, source), notes about skipped sections), or
    None when saptune does not run at boot."""
    if not read_unit_state(fs, "saptune.service").enabled:
        return None
    text = fs.read_text(SYSCONFIG)
    conf = parse_shell_assignments(text, SYSCONFIG) if text else {}
    running = _os_release(host.os_version) if host is not None else ""
    # system.GetCSP() reads the DMI vendor; the host facts know Azure (aws/google: not matched)
    csp = "azure" if host is not None and host.platform == "azure" else ""
    writes: list[tuple[str, str, str]] = []
    skipped: list[str] = []
    for note in conf.get("NOTE_APPLY_ORDER", "").split():
        extra = f"etc/saptune/extra/{note}.conf"
        rel = extra if fs.resolves(extra) else f"usr/share/saptune/notes/{note}"
        body = fs.read_text(rel)
        if body is None:
            raise ParseError(rel, f"saptune note {note} of NOTE_APPLY_ORDER is missing")
        override_rel = f"etc/saptune/override/{note}"
        override = {k: (v, src) for s, _t, k, v, src in _sections(fs.read_text(override_rel) or "", override_rel)
                    if s == "sysctl"}
        for section, tags, key, value, src in _sections(body, rel):
            if section != "sysctl":
                continue
            ok = True
            for tag in tags:
                kind, _, want = tag.partition("=")
                if kind == "os":
                    ok = ok and _os_matches(want, running)
                elif kind == "csp":
                    ok = ok and want == csp
                else:
                    ok = False
                    skipped.append(f"{src}: section tag {tag} not judged; its keys are not counted")
            if not ok:
                continue
            if key in override:
                value, src = override[key]
                if value == "":
                    continue  # an empty override value: saptune leaves the parameter alone
            writes.append((key, value, src))
    return writes, skipped
