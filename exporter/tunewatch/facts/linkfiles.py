"""systemd .link files: which one udev's net_setup_link applies to each interface at boot.

systemd.link(5): files in /etc, /run, /usr/local/lib, /usr/lib and /lib systemd/network,
merged by name (the first directory wins a name, `/dev/null` or an empty file masks it);
"The first (in lexical order) of the link files that matches a given device is applied".
/run is empty at the next boot: a file there counts then only when a generator writes it
again (netplan, facts/netplan.py); any other is reported as runtime-only. Kept apart from
facts/netconfig.py because it is one consumer (net_setup_link) with its own file set.
"""

from __future__ import annotations

import fnmatch

from ..host.fs import FS
from ..parsers.systemd_link import LinkFile, parse_link_file
from . import netplan
from .netdevice import NetDevice

# (source, settings, targets, problem, on_add): facts/netconfig.py makes them PersistedEthtool
Entry = tuple[str, dict[str, str], tuple[str, ...], "str | None", "bool | None"]

LINK_DIRS = ("etc/systemd/network", "run/systemd/network", "usr/local/lib/systemd/network",
             "usr/lib/systemd/network", "lib/systemd/network")


_HOST_CONDITIONS = {"Host", "Virtualization", "KernelCommandLine", "KernelVersion", "Architecture", "Firmware",
                    "Credential"}


def _link_key_matches(key: str, values: tuple[str, ...], dev: NetDevice) -> bool:
    """One [Match] key, as systemd's net_condition_test_strv(): a matching negative item
    fails it; with positive items, one of them must match."""
    if key in _HOST_CONDITIONS:
        return True  # conditions on the host, not the interface: not judged here
    props = {"ID_NET_DRIVER": dev.driver, "INTERFACE": dev.name, "ID_PATH": dev.id_path}
    subjects = {"OriginalName": dev.name, "Driver": dev.driver, "Path": dev.id_path, "Type": dev.type,
                "MACAddress": dev.mac, "PermanentMACAddress": dev.permanent_mac, "Kind": None}
    positive, hit = False, False
    for v in values:
        inverted = v.startswith("!")
        pattern = v[1:] if inverted else v
        if key in ("MACAddress", "PermanentMACAddress"):
            subject = subjects[key]
            matched = subject is not None and subject == pattern.lower().replace("-", ":")
        elif key == "Property":
            prop, _, pattern = pattern.partition("=")
            subject = props.get(prop)
            matched = subject is not None and fnmatch.fnmatchcase(subject, pattern)
        else:
            subject = subjects.get(key)
            matched = subject is not None and fnmatch.fnmatchcase(subject, pattern)
        if inverted and matched:
            return False
        if not inverted:
            positive, hit = True, hit or matched
    return hit or not positive


def link_applies(link: LinkFile, dev: NetDevice) -> bool:
    return all(_link_key_matches(m.key, m.values, dev) for m in link.match)


def _boot_links(fs: FS) -> tuple[list[LinkFile], list[tuple[LinkFile, str]]]:
    """The .link files udev reads at the next boot, in name order, and the /run files that
    will not be there (with why): /run is empty then, and only netplan's generator writes
    `run/systemd/network/10-netplan-*.link` again, from its YAML (facts/netplan.py)."""
    chosen: dict[str, LinkFile | str | None] = {}
    gone: list[tuple[LinkFile, str]] = []
    generated = netplan.generated_links(fs)
    for d in LINK_DIRS:
        if not d.startswith("run/"):
            for rel in fs.glob(d, "*.link"):
                chosen.setdefault(rel.rsplit("/", 1)[1], rel)
            continue
        for rel in fs.glob(d, "*.link"):
            name = rel.rsplit("/", 1)[1]
            text = fs.read_text(rel) or ""
            if name in generated or name in chosen or not text.strip():
                continue
            why = ("netplan deletes run/systemd/network/10-netplan-* at boot and no netplan YAML defines it"
                   if name.startswith("10-netplan-") else "no generator writes it again at boot")
            gone.append((parse_link_file(text, rel), f"{rel} is in /run, which is empty at the next boot, and "
                                                      f"{why}: it counts for the runtime only"))
        for name, link in generated.items():
            chosen.setdefault(name, link)
    links = []
    for name in sorted(chosen):
        item = chosen[name]
        if isinstance(item, LinkFile):
            links.append(item)
        elif item and fs.readlink(item) != "/dev/null":
            text = fs.read_required(item)
            if text.strip():  # systemd.link(5): an empty file masks the name, like /dev/null
                links.append(parse_link_file(text, item))
    return links, gone


def from_link_files(fs: FS, devices: dict[str, NetDevice]) -> list[Entry]:
    links, gone = _boot_links(fs)
    found: list[Entry] = []
    for name, dev in devices.items():
        found += [(stale.source, {}, (name,), why, False) for stale, why in gone
                  if stale.settings and link_applies(stale, dev)]
        first = next((link for link in links if link_applies(link, dev)), None)
        if first is None:
            continue
        # net_setup_link applies the .link on every "add" event of the device (SPEC "After a driver update")
        if first.settings:
            found.append((first.source, dict(first.settings), (name,), None, True))
        for why in first.rejected:
            found.append((first.source, {}, (name,), why, None))
        for later in links[links.index(first) + 1:]:
            if later.settings and link_applies(later, dev):
                found.append((later.source, {}, (name,), f"{later.source} also matches {name} but only the first "
                                                         f"matching .link file applies ({first.source})", None))
    return found
