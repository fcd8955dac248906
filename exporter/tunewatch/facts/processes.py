"""Running processes by command name (proc/<pid>/comm).

A process list that cannot be seen whole is an error, never "nothing runs": with procfs
mounted `hidepid=2` (`invisible`) an unprivileged reader sees only its own pids, with
`hidepid=1` (`noaccess`) it sees every pid folder but may not read it (proc(5), "Mount
options"). Every Linux system has pid 1, so a missing or unreadable proc/1 means the list
is hidden (or the snapshot holds none), and any permission error means it is incomplete.
"""

from __future__ import annotations

from ..errors import FactError
from ..host.fs import FS


def read_process_names(fs: FS) -> dict[int, str]:
    pids = [entry for entry in fs.listdir("proc") if entry.isdigit()]
    if not pids:
        raise FactError("process list absent: proc/ has no <pid> folders")
    if "1" not in pids:
        raise FactError("process list unreadable: proc/1 is not visible (procfs mounted with hidepid=2?)")
    try:
        comms = fs.read_each("proc", pids, "comm")
    except FactError as e:
        raise FactError(f"process list unreadable: {e} (procfs mounted with hidepid?)") from e
    # None: the process exited while we read
    names = {int(entry): comm for entry, comm in comms.items() if comm is not None}
    if 1 not in names:
        raise FactError("process list unreadable: proc/1/comm is absent")
    return names
