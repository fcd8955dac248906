"""The running kernel's value of one sysctl key, from proc/sys under the scanned root.

Apart from facts/sysctl.py (what the next boot sets): applicability conditions read
runtime values on most hosts, and the boot-time reader brings the sysctl.d, modprobe.d
and tuned parsers with it (docs/architecture.md#start-up-cost).
"""

from __future__ import annotations

from ..host.fs import FS
from ..parsers.sysctl_conf import sysctl_key_to_path


def read_runtime(fs: FS, key: str) -> str | None:
    value = fs.read_text(sysctl_key_to_path(key))
    return None if value is None else " ".join(value.split())
