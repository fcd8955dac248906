"""The systemd .link files netplan's generator writes at every boot, from the netplan YAML.

/run is empty at boot (file-hierarchy(7)); `netplan generate` (the systemd generator
`netplan`) first deletes `run/systemd/network/10-netplan-*` (canonical/netplan
`src/networkd.c` `_netplan_networkd_cleanup()`), then writes one
`run/systemd/network/10-netplan-<id>.link` per physical definition that needs one
(`_netplan_netdef_write_networkd()` -> `write_link_file()`). So a file there counts at the
next boot only as the YAML says it will be written; a hand-made or stale one does not.

The YAML: `{lib,etc,run}/netplan/*.yaml` (`src/util.c` `_netplan_find_yaml_glob()`), a file
name in a later directory shadowing an earlier one, read in name order, later
definitions of the same id overriding keys of earlier ones (netplan(5) "the
configuration is merged"). run/netplan is empty at the next boot, like the rest of /run.

`write_link_file()` writes a file only when the definition sets `set-name`, `wakeonlan`,
`mtu` or an offload option; `[Match]` from `append_match_section()`: `match.driver`
(`Driver=`, several separated by blanks), `match.macaddress` (`PermanentMACAddress=`),
`match.name` (`OriginalName=`), and a physical definition without `match:` matches the
interface named like its id (`src/parse.c`: "physical device without match: means match
name on ID"). `[Link]`: `Name=`, `WakeOnLan=`, `MTUBytes=`, `ReceiveChecksumOffload=`,
`TransmitChecksumOffload=`, `TCPSegmentationOffload=`, `TCP6SegmentationOffload=`,
`GenericSegmentationOffload=`, `GenericReceiveOffload=`, `LargeReceiveOffload=`.
YAML is read as data (`yaml.safe_load`), never as code.
"""

from __future__ import annotations

from ..errors import ParseError
from ..host.fs import FS
from ..parsers.systemd_link import LinkFile, parse_link_file

YAML_DIRS = ("lib/netplan", "etc/netplan")  # run/netplan: empty at the next boot
_OFFLOADS = (("receive-checksum-offload", "ReceiveChecksumOffload"),
             ("transmit-checksum-offload", "TransmitChecksumOffload"),
             ("tcp-segmentation-offload", "TCPSegmentationOffload"),
             ("tcp6-segmentation-offload", "TCP6SegmentationOffload"),
             ("generic-segmentation-offload", "GenericSegmentationOffload"),
             ("generic-receive-offload", "GenericReceiveOffload"),
             ("large-receive-offload", "LargeReceiveOffload"))
GENERATED_PREFIX = "run/systemd/network/10-netplan-"


def _yaml_files(fs: FS) -> list[str]:
    chosen: dict[str, str] = {}
    for d in YAML_DIRS:
        for rel in fs.glob(d, "*.yaml"):
            chosen[rel.rsplit("/", 1)[1]] = rel  # a later directory shadows the name
    return [chosen[n] for n in sorted(chosen)]


def _merge(into: dict, new: dict) -> None:
    for k, v in new.items():
        if isinstance(v, dict) and isinstance(into.get(k), dict):
            _merge(into[k], v)
        else:
            into[k] = v


def ethernets(fs: FS) -> tuple[dict[str, dict], dict[str, list[str]]]:
    """(id -> merged definition, id -> the YAML files defining it)."""
    import yaml  # only on hosts with netplan YAML

    defs: dict[str, dict] = {}
    files: dict[str, list[str]] = {}
    for rel in _yaml_files(fs):
        try:
            doc = yaml.safe_load(fs.read_required(rel)) or {}
        except yaml.YAMLError as e:
            raise ParseError(rel, f"netplan YAML: {str(e).splitlines()[0]}") from None
        section = (doc.get("network") or {}).get("ethernets") if isinstance(doc, dict) else None
        if not isinstance(section, dict):
            continue
        for netdef_id, body in section.items():
            if isinstance(body, dict):
                _merge(defs.setdefault(str(netdef_id), {}), body)
                files.setdefault(str(netdef_id), []).append(rel)
    return defs, files


def _bool(value: object) -> str:
    return "true" if value is True else "false"


def link_text(netdef_id: str, body: dict) -> str | None:
    """The .link file `write_link_file()` writes for one ethernet definition, or None."""
    offloads = [(key, name) for key, name in _OFFLOADS if isinstance(body.get(key), bool)]
    if not (body.get("set-name") or body.get("wakeonlan") or body.get("mtu") or offloads):
        return None
    match = body.get("match") if isinstance(body.get("match"), dict) else None
    lines = ["[Match]"]
    if match is not None:
        driver = match.get("driver")
        if driver:
            lines.append("Driver=" + (" ".join(map(str, driver)) if isinstance(driver, list) else str(driver)))
        if match.get("macaddress"):
            lines.append(f"PermanentMACAddress={match['macaddress']}")
        if match.get("name"):
            lines.append(f"OriginalName={match['name']}")
    else:
        lines.append(f"OriginalName={netdef_id}")
    lines += ["", "[Link]"]
    if body.get("set-name"):
        lines.append(f"Name={body['set-name']}")
    lines.append("WakeOnLan=" + ("magic" if body.get("wakeonlan") else "off"))
    if body.get("mtu"):
        lines.append(f"MTUBytes={body['mtu']}")
    lines += [f"{name}={_bool(body[key])}" for key, name in offloads]
    return "\n".join(lines) + "\n"


def generated_links(fs: FS) -> dict[str, LinkFile]:
    """File name -> the .link the generator writes at the next boot; its source names the YAML."""
    if not any(fs.glob(d, "*.yaml") for d in YAML_DIRS):
        return {}
    from urllib.parse import quote  # here: ~3 ms of start-up with ipaddress, for hosts with netplan only

    defs, files = ethernets(fs)
    out = {}
    for netdef_id, body in defs.items():
        text = link_text(netdef_id, body)
        if text is None:
            continue
        name = f"10-netplan-{quote(netdef_id, safe='')}.link"
        source = f"{', '.join(files[netdef_id])} (netplan writes {GENERATED_PREFIX}{name[len('10-netplan-'):]} at boot)"
        out[name] = parse_link_file(text, source)
    return out
