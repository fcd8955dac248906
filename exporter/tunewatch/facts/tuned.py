"""The active tuned profile and its merged settings, following `include=`."""

from __future__ import annotations


from .._record import FrozenRecord
from ..errors import FactError
from ..host.fs import FS
from ..parsers.ini import parse_ini

_PROFILE_DIRS = ("etc/tuned", "usr/lib/tuned", "lib/tuned")


class TunedProfile(FrozenRecord):
    __slots__ = ("name", "chain", "sysctl")
    name: str
    chain: tuple[str, ...]  # the profile and every profile it includes, outermost first
    sysctl: dict[str, tuple[str, str]]  # key -> (value, source)

    def __init__(self, name: str, chain: tuple[str, ...], sysctl: dict[str, tuple[str, str]] | None = None):
        self.name = name
        self.chain = chain
        self.sysctl = {} if sysctl is None else sysctl


def _profile_file(fs: FS, name: str) -> str | None:
    for d in _PROFILE_DIRS:
        rel = f"{d}/{name}/tuned.conf"
        if fs.exists(rel):
            return rel
    return None


def _load(fs: FS, name: str, seen: tuple[str, ...]) -> tuple[tuple[str, ...], dict]:
    if name in seen:
        raise FactError(f"tuned profile include loop: {' -> '.join(seen + (name,))}")
    rel = _profile_file(fs, name)
    if rel is None:
        return (name,), {}
    conf = parse_ini(fs.read_required(rel), rel)
    chain: tuple[str, ...] = (name,)
    merged: dict[str, tuple[str, str]] = {}
    for included in filter(None, (p.strip() for p in conf.get("main", {}).get("include", "").split(","))):
        sub_chain, sub_sysctl = _load(fs, included, seen + (name,))
        chain += sub_chain
        merged.update(sub_sysctl)
    merged.update({k: (v, rel) for k, v in conf.get("sysctl", {}).items()})
    return chain, merged


def read_active_tuned(fs: FS) -> TunedProfile | None:
    active = fs.read_value("etc/tuned/active_profile")
    if not active:
        return None
    name = active.split()[0]  # tuned allows several merged profiles; the first one leads
    chain, sysctl = _load(fs, name, ())
    return TunedProfile(name, chain, sysctl)
