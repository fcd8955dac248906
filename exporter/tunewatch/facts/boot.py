"""What re-applies NIC settings at boot: ifcfg, NetworkManager, systemd, udev.

Two views: `boot_scripts` (text of every mechanism that runs at boot: NetworkManager
dispatcher scripts, enabled systemd units with the scripts they execute, an executable
rc.local, cron `@reboot` lines; udev rules are evaluated per device instead) and
`persisted_ethtool` (ethtool settings each
mechanism applies and the interfaces it reaches, see facts/netconfig.py).

NetworkManager-dispatcher(8): scripts in /{etc,usr/lib}/NetworkManager/dispatcher.d (and
their pre-up.d / pre-down.d) run "in alphabetical order"; a name in /etc replaces the same
name in /usr/lib and a link to /dev/null hides it (nm-dispatcher.c `find_scripts()`). "Each
script should be a regular executable file owned by root. Furthermore, it must not be
writable by group or other, and not setuid." Scripts failing that are kept with a
`problem` (never run) so checks can say why.

Units are looked up in the directories that exist at the next boot (services.BOOT_UNIT_DIRS):
/run is a tmpfs emptied at every boot, so a unit file found only there starts nothing then,
whatever link enables it. An enabled instance `name@arg.service` (also one a device unit's
`.wants` starts) runs its template with the specifiers substituted (systemd.unit(5)).
"""

from __future__ import annotations

import os
import re
import stat

from .._lazyre import lazy
from .._record import FrozenRecord
from ..errors import TunewatchError
from ..host.fs import FS
from . import netconfig
from .filestat import file_stat
from .interfaces import read_interfaces
from .netconfig import PersistedEthtool
from .services import boot_unit_file, enabled_units, read_unit_state, template_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .interfaces import Interface
    from .netconfig import Readers
    from .netdevice import NetDevice
    from .udev import UdevOutcome

__all__ = ["BootScript", "PersistedEthtool", "boot_scripts", "persisted_ethtool"]


class BootScript(FrozenRecord):
    __slots__ = ("source", "mechanism", "text", "problem", "wanted_by")
    source: str
    mechanism: str  # "nm-dispatcher", "systemd", "udev", "rc-local", "cron"
    text: str
    problem: str | None  # why it never runs
    wanted_by: tuple[str, ...]  # a unit's .wants/.requires directories (a device unit's: bound to the device)

    def __init__(self, source: str, mechanism: str, text: str, problem: str | None = None,
                 wanted_by: tuple[str, ...] = ()):
        self.source = source
        self.mechanism = mechanism
        self.text = text
        self.problem = problem
        self.wanted_by = wanted_by

    @property
    def device_bound(self) -> bool:
        """Started by a device unit (`sys-subsystem-net-devices-<if>.device.wants`): systemd
        starts it again each time the device appears (systemd.device(5) "SYSTEMD_WANTS=")."""
        return any(w.endswith((".device.wants", ".device.requires")) for w in self.wanted_by)


_MAX_SCRIPT_BYTES = 256 * 1024
_EXEC = re.compile(r"^\s*Exec(?:Start|StartPre|StartPost)\s*=\s*[-@:+!]*(\S+)(.*)$", re.M)
_POSITIONAL = lazy(r'"?\$(?:\{(\d+)\}|(\d)(?!\d))"?|"?\$(?:\{[@*]\}|[@*])"?')


def with_arguments(text: str, args: list[str]) -> str:
    """The script's text as it runs with `args`: `$1`, `${2}`... (and `$@`, `$*`) replaced
    by the unit's ExecStart arguments (systemd.service(5) "Command lines"), so a script
    that configures `$1` configures the interface the unit names."""
    def sub(m: re.Match) -> str:
        if m.group(1) is None and m.group(2) is None:
            return " ".join(args)
        n = int(m.group(1) or m.group(2))
        return args[n - 1] if 0 < n <= len(args) else m.group(0)
    return _POSITIONAL.sub(sub, text) if args else text


# where a unit's script is read from (scan/collect.py copies the same): a test, not a pattern to compile
SCRIPT_DIRS = ("/usr/", "/etc/", "/opt/", "/root/", "/sbin/", "/bin/", "/lib/")


def _script_text(fs: FS, path: str, remote: NetworkMounts) -> str:
    """Text of a script a unit runs, unless it lives on a network mount (a hung NFS
    server must not hang the scan: /opt/sas on NFS is common on SAS Grid hosts)."""
    if not path.startswith(SCRIPT_DIRS) or remote.hold(path):
        return ""
    try:  # scripts, not daemons: skip big files and binaries (dbus-daemon, tuned...)
        if os.path.getsize(fs.path(path)) > _MAX_SCRIPT_BYTES:
            return ""
        text = fs.read_text(path)
    except (OSError, TunewatchError):
        return ""
    return "" if not text or "\x00" in text else text


class NetworkMounts:
    """Mount points of network file systems, asked whether a path is one of them or below
    one (`path == m or path.startswith(m.rstrip("/") + "/")` for some m): by looking up
    the path's leading parts, as a host may have a thousand NFS mounts and a script path
    has a few parts."""
    __slots__ = ("points", "tops")

    def __init__(self, mounts: tuple[str, ...]):
        self.points = frozenset(mounts)
        self.tops = frozenset(m.rstrip("/") for m in mounts)  # path starts with top + "/"

    def hold(self, path: str) -> bool:
        if not self.points:
            return False
        return path in self.points or any(path[:i] in self.tops for i, c in enumerate(path) if c == "/")


def _executed(fs: FS, program: str, rest: str, remote: NetworkMounts) -> str:
    """The script an Exec line runs, with the line's arguments; without a script text there
    is nothing to substitute, and the arguments are not even split (docs/architecture.md#start-up-cost)."""
    text = _script_text(fs, program, remote)
    return with_arguments(text, _args(rest)) if text else ""


def _args(rest: str) -> list[str]:
    import shlex  # only for a script found on this root

    try:
        return shlex.split(rest)
    except ValueError:
        return rest.split()


def _dispatcher_problem(fs: FS, rel: str) -> str | None:
    st = file_stat(fs, rel)
    if st is None:
        return "a dangling link"
    if not st.regular:
        return "not a regular file"
    if st.uid != 0:
        return f"owned by uid {st.uid}, not root"
    if st.mode & (stat.S_IWGRP | stat.S_IWOTH | stat.S_ISUID):
        return f"mode {st.mode:04o} is writable by group or other, or setuid"
    if not st.mode & stat.S_IXUSR:
        return f"mode {st.mode:04o} is not executable by its owner"
    return None


def _dispatcher_off(fs: FS) -> str | None:
    """Dispatcher scripts run only when NetworkManager starts at boot and its dispatcher
    service (D-Bus activated) is not masked."""
    off = netconfig.consumer_problem(fs, ("NetworkManager.service",), "a dispatcher script")
    if off is None and read_unit_state(fs, "NetworkManager-dispatcher.service").masked:
        off = "NetworkManager-dispatcher.service is masked"
    return off


def _dispatcher_scripts(fs: FS) -> list[BootScript]:
    scripts = []
    off: str | None | bool = False  # computed once, when there is a script
    for sub in ("", "/pre-up.d"):  # "up" runs the top directory, "pre-up" its pre-up.d
        chosen = fs.config_files((f"etc/NetworkManager/dispatcher.d{sub}",
                                  f"usr/lib/NetworkManager/dispatcher.d{sub}"), "*")
        for rel in chosen:
            if fs.is_dir(rel) and not fs.readlink(rel):
                continue
            if off is False:
                off = _dispatcher_off(fs)
            problem = off or _dispatcher_problem(fs, rel)
            readable = fs.resolves(rel) and not fs.is_dir(rel)  # kept for messages even when never run
            text = (fs.read_text(rel) or "") if readable else ""
            scripts.append(BootScript(rel, "nm-dispatcher", text,
                                      f"NetworkManager-dispatcher never runs {rel}: {problem}" if problem else None))
    return scripts


def _startup_files(fs: FS) -> list[BootScript]:
    """rc.local (run by rc-local.service only when executable) and cron `@reboot` lines."""
    scripts = []
    for rel in ("etc/rc.d/rc.local", "etc/rc.local", "etc/init.d/after.local"):
        if fs.exists(rel) and fs.is_executable(rel):
            scripts.append(BootScript(rel, "rc-local", fs.read_text(rel) or ""))
    tabs = ["etc/crontab", *fs.glob("etc/cron.d"), "var/spool/cron/root", "var/spool/cron/tabs/root",
            "var/spool/cron/crontabs/root"]
    for rel in tabs:
        lines = [ln for ln in (fs.read_text(rel) or "").splitlines() if ln.lstrip().startswith("@reboot")]
        if lines:
            scripts.append(BootScript(rel, "cron", "\n".join(lines)))
    return scripts


_SPECIFIER = lazy(r"%([%inNpI])")


def _unescape(arg: str) -> str:
    """systemd-escape(1) undone (`%I`): `-` is `/`, `\\xNN` a byte."""
    return re.sub(r"\\x([0-9a-fA-F]{2})", lambda m: chr(int(m.group(1), 16)), arg.replace("-", "/"))


def with_specifiers(text: str, unit: str) -> str:
    """A template's text for instance `unit`: systemd.unit(5) "Specifiers" `%i` (instance
    name), `%I` (unescaped), `%n`, `%N`, `%p` and `%%`; other specifiers are left as written."""
    tpl = template_of(unit)
    if tpl is None:
        return text
    arg = tpl[1]
    prefix = unit.split("@", 1)[0]
    values = {"%": "%", "i": arg, "I": _unescape(arg), "n": unit, "N": unit.rsplit(".", 1)[0], "p": prefix}
    return _SPECIFIER.sub(lambda m: values[m.group(1)], text)


def boot_scripts(fs: FS, remote_mounts: tuple[str, ...] = ()) -> list[BootScript]:
    """`remote_mounts`: mount points of network file systems, never read below."""
    scripts: list[BootScript] = _dispatcher_scripts(fs)
    remote = NetworkMounts(remote_mounts)
    for unit in sorted(u for u in enabled_units(fs) if u.endswith(".service")):
        rel = boot_unit_file(fs, unit)
        if rel is None or fs.is_dir(rel):
            continue
        text = with_specifiers(fs.read_text(rel) or "", unit)
        executed = "".join(_executed(fs, m.group(1), m.group(2), remote) for m in _EXEC.finditer(text))
        source = rel if rel.endswith("/" + unit) else f"{rel} as {unit}"
        scripts.append(BootScript(source, "systemd", text + "\n" + executed,
                                  wanted_by=read_unit_state(fs, unit).wanted_by))
    # udev rules are evaluated per device (facts/udev.py, Facts.udev_rules), not read as text here
    return scripts + _startup_files(fs)


def persisted_ethtool(fs: FS, scripts: list[BootScript], interfaces: dict[str, Interface] | None = None,
                      devices: dict[str, NetDevice] | None = None, outcomes: dict[str, UdevOutcome] | None = None,
                      readers: Readers | None = None, tuned_layouts: dict | None = None) -> list[PersistedEthtool]:
    """`interfaces`, `devices`, `outcomes` (udev per device): as a scan's Facts read them once;
    `readers` and `tuned_layouts`: content's, see netconfig.persisted_ethtool."""
    interfaces = interfaces if interfaces is not None else read_interfaces(fs)
    return netconfig.persisted_ethtool(fs, [s for s in scripts if s.problem is None], interfaces, devices, outcomes,
                                       readers, tuned_layouts)
