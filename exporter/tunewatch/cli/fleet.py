"""`scan --vsphere.vm GLOB` over several VMs: one report per format, a section per VM."""

from __future__ import annotations

from typing import Callable

from ..errors import ContentError
from ..outputs.fleet import FLEET_FORMATS, render_fleet
from ..results import EXIT_OK

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..vsphere.central import FleetResult


def write_fleet_reports(reports: list[tuple[str, str | None]], fleet: FleetResult,
                        write: Callable[[str, str | None], None],
                        colour: Callable[[bool], bool]) -> int:
    """Every requested report of the fleet (`write(text, path)`); the exit code: 1 when
    vCenter could not be read, else 2 when a VM fails or errors, else 0."""
    for fmt, _path in reports:
        if fmt not in FLEET_FORMATS:
            raise ContentError("--format", f"a scan of several VMs reports as {', '.join(FLEET_FORMATS)}, not {fmt} "
                                           "(serve --vsphere.vm exports the fleet's metrics)")
    for fmt, path in reports:
        write(render_fleet(fmt, fleet.endpoint, fleet.error, fleet.vms, colour=fmt == "text" and colour(path is None)),
              path)
    if fleet.error:
        return 1
    return max((result.exit_code for _name, result in fleet.vms), default=EXIT_OK)
