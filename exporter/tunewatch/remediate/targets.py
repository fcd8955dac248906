"""Files that remediation writes, shared with the goss export (which asserts them when a
check fails today: after remediation, that is where the setting lives).

Names sort after the distribution's and admins' usual drop-ins so that they win:
systemd-sysctl and `sysctl --system` apply sysctl.d files in lexical order of file names
(sysctl.d(5)), udev reads rules in lexical order and a later assignment wins (udev(7)).
"""

from __future__ import annotations

SYSCTL_DROPIN = "etc/sysctl.d/99-tunewatch.conf"


def udev_rule(subsystem: str, attribute: str) -> str:
    return f"etc/udev/rules.d/99-tunewatch-{subsystem}-{attribute.replace('_', '-')}.rules"
