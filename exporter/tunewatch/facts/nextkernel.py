"""The kernel that boots next, as the boot loader will pick it (SPEC §2 "After a driver
update"). Driver and module defaults, modules.builtin and the kernel tables are taken for
it, not for the running kernel: a host with a newer kernel installed as the GRUB default
comes back from its next reboot with that kernel's defaults.

GRUB (grub-core/normal/menu.c, tests/scenarios/README.md "The next kernel" cites lines):
- the menu is grub.cfg's top-level `menuentry`/`submenu` blocks in order; where grub.cfg
  runs `blscfg` (Fedora, RHEL 8+), the BLS entries of boot/loader/entries/*.conf stand
  there, newest first (blscfg.c bls_cmp(): ids compared as name-version-release). A
  snapshot with BLS entries and no grub.cfg has that list as its menu;
- `default` is what grub.cfg sets (`set default="${saved_entry}"` for GRUB_DEFAULT=saved,
  else GRUB_DEFAULT, 0 when unset: util/grub.d/00_header.in); a grubenv `next_entry`
  (grub-reboot) wins for one boot. Without grub.cfg, GRUB_DEFAULT of etc/default/grub and
  then etc/default/grub.d/*.cfg (sourced after it, later wins) stands for it;
- `default` picks an entry by number, title or id; `A>B` picks B inside submenu A; a
  value that picks nothing means entry 0 (run_menu()).
Without a GRUB menu, the `boot/vmlinuz` link names the kernel (SUSE's kernel scriptlet
points it at each newly installed kernel); without any of these files, the running kernel
is assumed and the result says so. A file that exists but cannot be parsed is an error for
every check that needs the next kernel, never a silent fallback.
"""

from __future__ import annotations

import functools
import re

from .._record import FrozenRecord
from ..errors import FactError, ParseError
from ..host.fs import FS
from ..parsers.grub import (
    MenuItem,
    bls_cmp,
    parse_bls_entry,
    parse_grub_cfg,
    parse_grubenv,
)
from ..parsers.shellvars import parse_shell_assignments

GRUB_CFGS = ("boot/grub2/grub.cfg", "boot/grub/grub.cfg")
GRUBENVS = ("boot/grub2/grubenv", "boot/grub/grubenv")
BLS_DIR = "boot/loader/entries"
VMLINUZ_LINK = "boot/vmlinuz"


class NextKernel(FrozenRecord):
    __slots__ = ("release", "running", "how")
    release: str  # "6.14.0-1012-azure"; the running kernel's when nothing else is known
    running: str
    how: str  # "the GRUB default entry 'Ubuntu' (GRUB_DEFAULT 0, boot/grub/grub.cfg)"

    def __init__(self, release: str, running: str, how: str):
        self.release = release
        self.running = running
        self.how = how

    @property
    def is_running(self) -> bool:
        return self.release == self.running

    def describe(self) -> str:
        """`6.14.0-1012-azure (the GRUB default entry ...; running 6.8.0-1021-azure)`."""
        if self.is_running:
            return f"{self.release} ({self.how}; the running kernel)" if "running" not in self.how else \
                f"{self.release} ({self.how})"
        return f"{self.release} ({self.how}; running {self.running})"


def _release_of(path: str, fs: FS) -> str | None:
    """The kernel release a `linux` path boots: `vmlinuz-<release>` as grub-mkconfig's
    10_linux names it (`version=... sed -e "s,^[^0-9]*-,,g"`); a bare `vmlinuz` is the
    link the distribution keeps in /boot."""
    name = path.rsplit("/", 1)[-1]
    if re.fullmatch(r"(vmlinu[xz]|Image|kernel|bzImage)", name):
        target = fs.link_basename(VMLINUZ_LINK)
        return _release_of(target, fs) if target and target != name else None
    release = re.sub(r"^[^0-9]*-", "", name, count=1)
    return release if release != name and release else None


def _bls_entries(fs: FS) -> list[MenuItem]:
    entries = []
    for rel in fs.glob(BLS_DIR, "*.conf"):
        name = rel.rsplit("/", 1)[1]
        if name.startswith("."):  # blscfg.c read_entry() skips dot files
            continue
        item = parse_bls_entry(fs.read_required(rel), rel, name[:-5])
        if item is not None:
            entries.append(item)
    # newest first: bls_add_entry() puts an entry before the first older one (a duplicate id is dropped)
    entries.sort(key=functools.cmp_to_key(lambda a, b: bls_cmp(b.id, a.id)))
    return [e for k, e in enumerate(entries) if k == 0 or bls_cmp(e.id, entries[k - 1].id) != 0]


def _grub_default(fs: FS) -> tuple[str, str] | None:
    """GRUB_DEFAULT and the file that set it: etc/default/grub, then grub.d/*.cfg (later wins)."""
    found = None
    for rel in ["etc/default/grub"] + fs.glob("etc/default/grub.d", "*.cfg"):
        text = fs.read_text(rel)
        if text is not None:
            values = parse_shell_assignments(text, rel)
            if "GRUB_DEFAULT" in values:
                found = (values["GRUB_DEFAULT"], rel)
    return found


def _split(spec: str) -> tuple[str, str | None]:
    """`A>B` -> ('A', 'B'): the first single '>' ends the part for this menu ('>>' is a '>')."""
    i = 0
    while i < len(spec):
        if spec[i] == ">":
            if spec[i + 1:i + 2] == ">":
                i += 2
                continue
            return spec[:i].replace(">>", ">"), spec[i + 1:] or None
        i += 1
    return spec.replace(">>", ">"), None


def _number(text: str) -> int | None:
    """grub_strtoul(val, 0, 0): leading digits (0x hex, leading 0 octal), None when none."""
    m = re.match(r"\s*(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)", text)
    if m is None:
        return None
    digits = m.group(1)
    return int(digits, 16) if digits[:2].lower() == "0x" else int(digits, 8 if digits.startswith("0") else 10)


def _pick(menu: list[MenuItem], spec: str | None, fedora: bool) -> tuple[int, MenuItem]:
    """The entry `default` selects in one menu level, with GRUB's precedence: upstream
    get_entry_number() tries a number first, then title or id per entry; Fedora's (blscfg
    builds) tries ids, then titles, then a number that must be the whole value."""
    if spec is not None:
        head = _split(spec)[0]
        if fedora:  # rhboot menu.c get_entry_number_helper(), then get_entry_number()'s tail test
            token = _split((spec.split() or [""])[0])[0]
            tries = [i for i, e in enumerate(menu) if e.id and e.id == token]
            tries += [i for i, e in enumerate(menu) if e.title == head]
            if re.fullmatch(r"[0-9]+|0[xX][0-9a-fA-F]+", spec):
                tries.append(_number(spec) or 0)
        else:
            n = _number(spec)
            tries = [n] if n is not None else [i for i, e in enumerate(menu) if head in (e.title, e.id)]
        if tries and 0 <= tries[0] < len(menu):
            return tries[0], menu[tries[0]]
    return 0, menu[0]  # run_menu(): a default outside the menu falls back to the first entry


def _choose(menu: list[MenuItem], spec: str | None, fedora: bool) -> list[MenuItem]:
    """The path of entries GRUB runs: a submenu opens with `default` set to the rest of
    the `>` path (upstream: unset without one, so its entry 0; Fedora keeps the value)."""
    path: list[MenuItem] = []
    while True:
        _i, item = _pick(menu, spec, fedora)
        path.append(item)
        if item.kind != "submenu" or not item.children:
            return path
        rest = _split(spec)[1] if spec is not None else None
        spec = rest if rest is not None else (spec if fedora else None)
        menu = list(item.children)


def _menu(fs: FS) -> tuple[list[MenuItem], str | None, list[tuple[int, str]], bool]:
    """(menu, grub.cfg path or None, its `set default` lines, Fedora blscfg build)."""
    for rel in GRUB_CFGS:
        text = fs.read_text(rel)
        if text is None:
            continue
        cfg = parse_grub_cfg(text, rel)
        fedora = any(i.kind == "blscfg" for i in cfg.items)
        menu: list[MenuItem] = []
        for item in cfg.items:
            menu += _bls_entries(fs) if item.kind == "blscfg" else [item]
        return menu, rel, list(cfg.defaults), fedora
    bls = _bls_entries(fs)
    return bls, None, [], bool(bls)


def _grubenv(fs: FS) -> tuple[dict[str, str], str | None]:
    for rel in GRUBENVS:
        text = fs.read_text(rel)
        if text is not None:
            return parse_grubenv(text, rel), rel
    return {}, None


def _expand(value: str, env: dict[str, str]) -> str:
    return re.sub(r"\$\{?(\w+)\}?", lambda m: env.get(m.group(1), ""), value)


def _stale_note(fs: FS, cfg_value: str) -> str:
    """GRUB runs grub.cfg; an etc/default/grub value it does not hold yet (update-grub not
    run since) takes effect only when grub.cfg is written again: named, not followed."""
    found = _grub_default(fs)
    if found is None:
        return ""
    wanted = "${saved_entry}" if found[0] == "saved" else found[0]
    if wanted == cfg_value:
        return ""
    return f"; {found[1]} says GRUB_DEFAULT={found[0]}, not in grub.cfg until update-grub/grub2-mkconfig runs"


def _default_spec(fs: FS, cfg: str | None, sets: list[tuple[int, str]], env: dict[str, str],
                  env_rel: str | None) -> tuple[str | None, str]:
    """GRUB's `default` at menu time and where it comes from."""
    if env.get("next_entry"):  # 00_header: `if [ "${next_entry}" ] ; then set default="${next_entry}"`
        return env["next_entry"], f"next_entry={env['next_entry']} in {env_rel} (grub-reboot, this boot only)"
    plain = [(n, v) for n, v in sets if "next_entry" not in v]
    if cfg is not None and plain:
        n, value = plain[-1]
        stale = _stale_note(fs, value)
        if "saved_entry" in value:
            saved = env.get("saved_entry")
            return saved, (f"saved_entry={saved} in {env_rel}" if saved else
                           f"GRUB_DEFAULT=saved with no saved_entry{f' in {env_rel}' if env_rel else ''}: "
                           "entry 0") + stale
        return _expand(value, env), f"default={_expand(value, env)} ({cfg}:{n})" + stale
    if cfg is not None:
        return None, f"{cfg} sets no default: entry 0"
    found = _grub_default(fs)
    value, where = found if found else ("0", "")
    if value == "saved":
        saved = env.get("saved_entry")
        return saved, (f"GRUB_DEFAULT=saved ({where}), saved_entry={saved} in {env_rel}" if saved else
                       f"GRUB_DEFAULT=saved ({where}) with no saved_entry: entry 0")
    return value, f"GRUB_DEFAULT={value} ({where})" if where else "GRUB_DEFAULT unset: entry 0"


def read_next_kernel(fs: FS, running: str) -> NextKernel:
    menu, cfg, sets, fedora = _menu(fs)
    if menu:
        env, env_rel = _grubenv(fs)
        spec, why = _default_spec(fs, cfg, sets, env, env_rel)
        path = _choose(menu, spec, fedora)
        entry = path[-1]
        titles = " > ".join(f"'{e.title}'" for e in path)
        where = cfg or BLS_DIR
        release = _release_of(entry.linux, fs) if entry.linux else None
        if release is None and entry.version:
            release = entry.version
        if release is None or "rescue" in release:  # dracut's rescue image: a copy of some kernel, which one is unknown
            raise FactError(f"the GRUB default entry {titles} ({where}) boots no Linux kernel this scan can name "
                            f"(linux {entry.linux or 'command missing'})")
        return NextKernel(release, running, f"the GRUB default entry {titles}, {why}")
    target = fs.link_basename(VMLINUZ_LINK)
    if target is not None:
        release = _release_of(target, fs)
        if release is None:
            raise ParseError(VMLINUZ_LINK, f"links to {target}, which names no kernel release")
        return NextKernel(release, running, f"the {VMLINUZ_LINK} link")
    return NextKernel(running, running, "the running kernel: no GRUB, BLS or boot/vmlinuz files")
