"""What every remediation template gets: the scan, its facts and helpers shared by templates."""

from __future__ import annotations

import re

from ..kinds.base import Target
from ..results import FAIL
from .hostview import HostView

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..content.catalog import SelectedCheck
    from ..facts.interfaces import Interface


def ere(text: str) -> str:
    """`text` as a POSIX extended regular expression matching it literally."""
    return re.sub(r"([.[\]()*+?{}|^$\\])", r"\\\1", text)


def _sysctl_key_ere(key: str) -> str:
    return "[./]".join(ere(part) for part in key.split("."))


def _show(value: Any) -> str:
    return ("on" if value else "off") if isinstance(value, bool) else str(value)


def _failed(result):
    return [o for o in result.objects if o.status == FAIL]


class Context:
    def __init__(self, view: HostView):
        self.view = view
        self.facts = view.facts
        self.fstab_wanted: dict[str, list[tuple[str, str, dict]]] = {}  # mount -> [(check, option, vars)]

    def target(self, sel: SelectedCheck) -> Target:
        return Target(sel.check.id, sel.vars, self.facts, self.view.profile.scope, sel.check.objects)

    def interface(self, name: str) -> Interface | None:
        return self.facts.interfaces.get(name)

    def uses_network_manager(self) -> bool:
        fs = self.facts.fs
        return self.facts.unit_state("NetworkManager.service").state == "enabled" or fs.is_dir("etc/NetworkManager")
