"""One scan of one root together with the facts it was judged on.

`tunewatch export goss` and `tunewatch remediate` both need the verdicts (which objects
failed) and the facts behind them (which file configures a sysctl, which mechanism the host
uses for NIC settings). The facts are read through the same `Facts` cache the engine uses.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from .. import results
from ..content.catalog import ResolvedProfile, SelectedCheck
from ..errors import ContentError
from ..facts.context import Facts
from ..host.fs import FS
from ..scan import engine

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..content.catalog import Content
    from ..content.waivers import Waiver


@dataclass
class HostView:
    result: results.ScanResult
    profile: ResolvedProfile
    facts: Facts

    def selected(self, check_id: str) -> SelectedCheck:
        return next(sel for sel in self.profile.checks if sel.check.id == check_id)


def scan_host(content: Content, profile: ResolvedProfile, root: str, waivers: list[Waiver] | None = None) -> HostView:
    if not os.path.isdir(root):
        raise ContentError(root, "--root is not a directory")
    result = engine.scan(content, profile, root, waivers)
    # the content's defaults, as the scan had them: the plan reads the facts the verdicts came from
    # (driver defaults, which release reads ifcfg, where tuned keeps its profiles)
    return HostView(result, profile, Facts(FS(root), engine._module_params(profile), defaults=content.defaults))
