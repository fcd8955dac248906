"""NIC settings tuned's `[net]` plugin applies while tuned runs the active profile.

tuned (redhat-performance/tuned, `tuned/plugins/plugin_net.py`) sets `channels=`, `ring=`,
`coalesce=` and `features=` of the devices a `[net]` instance selects, with `ethtool -L`,
`-G`, `-C`, `-K` (`_set_device_parameters()`), at start and on every hotplug "add" of such a
device (`hotplug.Plugin._added_device_apply_tuning()`). It counts at boot only while
tuned.service is enabled and the profile is active (`etc/tuned/active_profile`, several
names merged in order, later ones overriding: `tuned/profiles/merger.py`).

- The profile is loaded and merged by facts/tuned.py, as for the sysctls tuned writes
  (includes split on `,` or `;`, `-name` optional, a missing profile makes tuned apply
  nothing, `replace=`, `drop=`, `enabled`, `uname_regex` and `cpuinfo_regex` against
  /proc/cpuinfo; a unit whose start is not known here, a snapshot without /proc/cpuinfo or a
  regex that runs a tuned function, is reported, never judged). A unit's plugin is its `type=`,
  else its name.
- Devices: instances in priority order (`units/manager.py`, default priority 0, stable)
  take the free devices their `devices=` matches (`hardware/device_matcher.py`: rules split
  at blanks or commas, shell globs, `!` negation; no positive rule means `*`); a device
  under /sys/devices/virtual is never offered (`_device_is_supported()`).
- Values (`_parse_config_parameters()`): `:`, `;`, `,` and blanks all separate; an odd
  number of words is "invalid ... parameter" and sets nothing; `_check_parameters()` drops
  names the plugin does not know for channels, ring and coalesce; `features=` takes
  ethtool -K names (short `lro`, `gro`... or long ones).
- `${name}` in `devices=`, the regexes and the values takes the merged `[variables]`
  (facts/tuned.py `_expand_selectors()`); a `${f:...}` function (which tuned runs), an
  undefined variable and `devices_udev_regex=` are reported, never guessed.
"""

from __future__ import annotations

import fnmatch
import re

from .._lazyre import lazy
from ..host.fs import FS
from .netdevice import NetDevice
from .services import read_unit_state
from .tuned import read_active_tuned

Entry = tuple[str, dict[str, str], tuple[str, ...], "str | None", "bool | None"]

_SECTIONS = {"channels": ("channels", {"rx", "tx", "other", "combined"}),
             "ring": ("rings", {"rx", "rx-mini", "rx-jumbo", "tx"}),
             "coalesce": ("coalesce", {"adaptive-rx", "adaptive-tx", "cqe-mode-rx", "rx-usecs", "rx-frames",
                                       "rx-usecs-irq", "rx-frames-irq", "tx-usecs", "tx-frames", "tx-usecs-irq",
                                       "tx-frames-irq", "stats-block-usecs", "pkt-rate-low", "rx-usecs-low",
                                       "rx-frames-low", "tx-usecs-low", "tx-frames-low", "pkt-rate-high",
                                       "rx-usecs-high", "rx-frames-high", "tx-usecs-high", "tx-frames-high",
                                       "sample-interval", "tx-aggr-max-bytes", "tx-aggr-max-frames",
                                       "tx-aggr-time-usecs"}),
             "features": ("features", None)}
# ethtool -K short names (ethtool.c `off_flag_def`) as the long names ethtool -k shows
_FEATURES = {"rx": "rx-checksumming", "tx": "tx-checksumming", "sg": "scatter-gather",
             "tso": "tcp-segmentation-offload", "ufo": "udp-fragmentation-offload",
             "gso": "generic-segmentation-offload", "gro": "generic-receive-offload",
             "lro": "large-receive-offload", "rxvlan": "rx-vlan-offload", "txvlan": "tx-vlan-offload",
             "ntuple": "ntuple-filters", "rxhash": "receive-hashing"}
_SPLIT = lazy(r"(:\s*)|(\s+)|(\s*;\s*)|(\s*,\s*)")


def _matches(rules: str, device: str) -> bool:
    """tuned `DeviceMatcher.match()`."""
    parts = re.split(r"\s|,\s*", rules)
    positive = [r for r in parts if not r.startswith("!") and r.strip()]
    negative = [r[1:] for r in parts if r not in positive]
    return any(fnmatch.fnmatch(device, r) for r in (positive or ["*"])) and \
        not any(fnmatch.fnmatch(device, r) for r in negative)


def _settings(option: str, value: str) -> tuple[dict[str, str], str | None]:
    prefix, known = _SECTIONS[option]
    words = _SPLIT.sub(" ", value).split()
    if len(words) % 2:
        return {}, f"tuned logs \"invalid {option} parameter: '{value}'\" and sets nothing"
    pairs = dict(zip(words[::2], words[1::2]))
    dropped = [k for k in pairs if known is not None and k not in known]
    out = {}
    for k, v in pairs.items():
        if k in dropped:
            continue
        out[f"{prefix}.{_FEATURES.get(k, k) if option == 'features' else k}"] = v
    why = f"tuned ignores unknown {option} parameter(s): {', '.join(dropped)}" if dropped else None
    return out, why


def from_tuned(fs: FS, devices: dict[str, NetDevice], layouts: dict | None) -> list[Entry]:
    """`layouts`: content's tuned layout (facts/tuned.py `profile_dirs`). The profile is
    loaded and merged as facts/tuned.py models tuned (includes, optional and missing
    profiles, `replace=`, `drop=`, the units tuned starts and their order)."""
    profile = read_active_tuned(fs, layouts)
    if profile is None:
        return []
    units = profile.units
    net = [u for u in profile.applied if units[u]["type"] == "net" and any(k in units[u] for k in _SECTIONS)]
    unjudged = [u for u in profile.unknown_start if units[u]["type"] == "net"]
    if not net and not unjudged:
        return []
    state = read_unit_state(fs, "tuned.service")
    off = None if state.enabled else \
        f"tuned.service is {state.state.replace('-', ' ')}: profile {profile.name} is not applied at boot"
    free = [n for n, d in devices.items() if d.parents]  # /sys/devices/virtual/net devices are not offered
    found: list[Entry] = []
    for unit in net:
        options, source = units[unit], f"{profile.unit_files[unit]} [{unit}]"
        if "devices_udev_regex" in options:
            found.append((source, {}, tuple(free), f"devices_udev_regex={options['devices_udev_regex']} is not "
                          "judged here", True))
            continue
        if "${" in options["devices"]:  # a function tuned runs, or a variable no profile defines
            found.append((source, {}, tuple(free), f"devices={options['devices']} is not expanded here", True))
            continue
        mine = [n for n in free if _matches(options["devices"], n)]
        free = [n for n in free if n not in mine]
        if not mine:
            continue
        for option in _SECTIONS:
            value = options.get(option)
            if not value:
                continue
            if "${" in value:
                found.append((source, {}, tuple(mine), f"{option}={value} runs a tuned function or names an "
                              "undefined variable: not expanded here", True))
                continue
            settings, why = _settings(option, value)
            if settings or why:
                found.append((source, settings if not off else {}, tuple(mine), off, True))
            if why and not off:
                found.append((source, {}, tuple(mine), why, True))
    for unit in unjudged:  # whether tuned starts it is not known here (facts/tuned.py _applied())
        found.append((f"{profile.unit_files[unit]} [{unit}]", {}, tuple(free),
                      f"tuned may or may not start it: {profile.unknown_start[unit]}", True))
    return found
