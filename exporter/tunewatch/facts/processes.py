"""Running processes by command name (proc/<pid>/comm)."""

from __future__ import annotations

from ..fs import FS


def read_process_names(fs: FS) -> dict[int, str]:
    names: dict[int, str] = {}
    for entry in fs.listdir("proc"):
        if entry.isdigit():
            try:
                comm = fs.read_value(f"proc/{entry}/comm")
            except Exception:  # a process that exits while we read is simply gone
                continue
            if comm is not None:
                names[int(entry)] = comm
    return names
