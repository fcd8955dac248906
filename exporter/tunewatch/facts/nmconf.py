"""Which network devices NetworkManager manages at the next boot.

NetworkManager acts on a device only when it manages it: its keyfiles' `[ethtool]`
settings are applied and its dispatcher events raised for managed devices only. A device
is unmanaged when
- a udev rule sets `ENV{NM_UNMANAGED}="1"` for it (NetworkManager(8) "UDEV PROPERTIES";
  Azure images: azure-vm-utils `10-azure-unmanaged-sriov.rules`, WALinuxAgent's
  `68-azure-sriov-nm-unmanaged.rules`), or
- `[keyfile] unmanaged-devices=` of NetworkManager.conf matches it. NetworkManager.conf(5):
  `usr/lib/NetworkManager/conf.d` "is parsed first, even before NetworkManager.conf",
  `run/NetworkManager/conf.d` second, then `etc/NetworkManager/NetworkManager.conf`, then
  `etc/NetworkManager/conf.d`, "in order, with later files overriding earlier ones"; a file
  of the same name in /etc/conf.d shadows /run and /usr/lib ones. `key+=`/`key-=` append
  to or remove from a list set earlier. /run is empty at the next boot (file-hierarchy(7)),
  so a /run snippet decides nothing for it.

The device list syntax is NetworkManager.conf(5) "Device List Format" (libnm-core
`nm_match_spec_device()`): specs separated by `,` or `;`, `*`, a bare IFNAME or HWADDR,
`interface-name:` (`~` glob with `*`/`?`, `=` literal), `mac:`, `driver:` (optionally
`/version`), `type:`, `except:SPEC` (a negative match wins; a list of only negative
matches matches everything else). A spec this module cannot judge (`s390-subchannels:`,
`dhcp-plugin:`, a driver version) is reported instead of guessed.
"""

from __future__ import annotations

import fnmatch

from .._lazyre import lazy
from ..host.fs import FS
from .netdevice import NetDevice

_CONF_DIRS = ("usr/lib/NetworkManager/conf.d", "etc/NetworkManager/conf.d")
_MAIN = "etc/NetworkManager/NetworkManager.conf"
# nmcli GENERAL.TYPE of netdevice's type name (facts/netdevice.py `_ARPHRD`): what `type:` matches
_TYPES = {"ether": "ethernet", "infiniband": "infiniband", "loopback": "loopback"}


def _conf_files(fs: FS) -> list[str]:
    """NetworkManager.conf and its snippets in the order NetworkManager reads them at the
    next boot. Snippets of /usr/lib come first; /etc/conf.d names shadow /usr/lib ones."""
    chosen: dict[str, str] = {}
    for d in _CONF_DIRS:
        for rel in fs.glob(d, "*.conf"):
            chosen[rel.rsplit("/", 1)[1]] = rel  # the later directory (etc) wins a name
    lib = [chosen[n] for n in sorted(chosen) if chosen[n].startswith("usr/")]
    etc = [chosen[n] for n in sorted(chosen) if chosen[n].startswith("etc/")]
    return lib + ([_MAIN] if fs.exists(_MAIN) else []) + etc


def _keyfile_values(text: str, want_group: str = "keyfile",
                    want_key: str = "unmanaged-devices") -> list[tuple[str, str]]:
    """(operator, value) of every `want_key` line of the `[want_group]` group, in order
    (GKeyFile: `#` starts a comment line only; the last plain assignment wins)."""
    group, out = "", []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            group = line[1:-1].strip()
            continue
        key, sep, value = line.partition("=")
        key = key.strip()
        if sep and group == want_group and key.rstrip("+-").strip() == want_key:
            out.append((key[-1] if key[-1] in "+-" else "=", value.strip()))
    return out


def _split_specs(value: str) -> list[str]:
    """Specs separated by unescaped `,` or `;`, blanks trimmed (`\\s` keeps one)."""
    specs, cur, esc = [], "", False
    for ch in value:
        if esc:
            cur += {"s": " ", "t": "\t", "n": "\n"}.get(ch, ch)
            esc = False
        elif ch == "\\":
            esc = True
        elif ch in ",;":
            specs.append(cur.strip())
            cur = ""
        else:
            cur += ch
    specs.append(cur.strip())
    return [s for s in specs if s]


def unmanaged_specs(fs: FS, group: str = "keyfile", key: str = "unmanaged-devices") -> tuple[list[str], str | None]:
    """The effective `[keyfile] unmanaged-devices` list (or another list-valued key) and
    the last file that set it (None: no file sets it)."""
    specs: list[str] = []
    source = None
    for rel in _conf_files(fs):
        for op, value in _keyfile_values(fs.read_text(rel) or "", group, key):
            items = _split_specs(value)
            if op == "=":
                specs = items
            elif op == "+":
                specs += [s for s in items if s not in specs]
            else:
                specs = [s for s in specs if s not in items]
            source = rel
    return specs, source


def plugins(fs: FS) -> tuple[list[str], str] | None:
    """`[main] plugins` as the configuration sets it, and where; None when nothing sets it
    (the build's default applies: RHEL 8/9 packages build with ifcfg-rh in it)."""
    specs, source = unmanaged_specs(fs, "main", "plugins")
    return (specs, source) if source is not None else None


_MAC = lazy(r"^[0-9A-Fa-f]{2}([:-][0-9A-Fa-f]{2}){5,19}$")


def _one(spec: str, dev: NetDevice) -> bool | None:
    """Does one positive spec match `dev`? None: not judged here."""
    if spec == "*":
        return True
    kind, sep, arg = spec.partition(":")
    if not sep or (_MAC.match(spec) and kind not in ("mac", "interface-name", "driver", "type")):
        if _MAC.match(spec):
            return dev.permanent_mac is not None and dev.permanent_mac == spec.lower().replace("-", ":")
        return spec == dev.name  # a bare IFNAME: "Globbing is not supported"
    if kind == "interface-name":
        if arg.startswith("="):
            return arg[1:] == dev.name
        arg = arg.removeprefix("~")
        return fnmatch.fnmatchcase(dev.name, arg) if any(c in arg for c in "*?") else arg == dev.name
    if kind == "mac":
        return dev.permanent_mac is not None and dev.permanent_mac == arg.lower().replace("-", ":")
    if kind == "driver":
        return None if "/" in arg else arg == dev.driver
    if kind == "type":
        return _TYPES[dev.type] == arg if dev.type in _TYPES else None
    return None


def spec_matches(specs: list[str], dev: NetDevice) -> tuple[bool | None, list[str]]:
    """(matched, specs not judged) for `dev` by NetworkManager.conf(5) "Device List Format"."""
    unjudged: list[str] = []
    positive = [s for s in specs if not s.startswith("except:")]
    negative = [s[len("except:"):] for s in specs if s.startswith("except:")]
    for spec in negative:
        hit = _one(spec, dev)
        if hit is None:
            unjudged.append("except:" + spec)
        elif hit:
            return False, unjudged
    if not positive:
        return (bool(negative) and not unjudged) or None, unjudged
    hits = [_one(s, dev) for s in positive]
    unjudged += [s for s, h in zip(positive, hits) if h is None]
    if any(hits):
        return True, unjudged
    return (None if unjudged else False), unjudged


def unmanaged_devices(fs: FS, devices: dict[str, NetDevice], udev_env: dict[str, dict[str, str]]) -> dict[str, str]:
    """Device name -> why NetworkManager does not manage it at the next boot (an entry
    whose reason starts with "cannot tell" is a spec this module does not judge)."""
    out: dict[str, str] = {}
    specs, source = unmanaged_specs(fs)
    for name, dev in devices.items():
        if udev_env.get(name, {}).get("NM_UNMANAGED") == "1":
            out[name] = f"a udev rule sets NM_UNMANAGED=1 for {name}"
            continue
        if not specs:
            continue
        hit, unjudged = spec_matches(specs, dev)
        if hit:
            out[name] = f"[keyfile] unmanaged-devices={';'.join(specs)} in {source} matches {name}"
        elif hit is None:
            out[name] = (f"cannot tell whether [keyfile] unmanaged-devices in {source} matches {name} "
                         f"(not judged: {', '.join(unjudged)})")
    return out
