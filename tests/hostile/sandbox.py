"""Run a generated artefact as root in a throwaway root, with canaries.

`unshare` gives the run its own mount, pid and net namespaces (no network, its own /proc).
Inside it, a tmpfs covers /tmp, /sys and /proc/irq (a runtime step that escaped would write
there, not to this machine), the work directory is bound at /mnt/w (the snapshot copy and
the artefacts live there), and stubs replace `reboot`, `ethtool`, `systemctl`, `sysctl`,
`tuned-adm` and `pkill`, both first on PATH and bound over their absolute paths. Every stub
call is logged with its arguments. After the run the wrapper reports which canaries fired:
a `reboot` call, or a file named `x` or `/tmp/x` (what the hostile names try to create).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

STUBS = ("reboot", "ethtool", "systemctl", "sysctl", "tuned-adm", "pkill", "shutdown")
INSIDE = "/mnt/w"
WRAPPER = r'''set -u
W=/mnt/w
mount -t tmpfs tw-sandbox /mnt
mkdir -p /mnt/w
mount --bind "$TW_OUTSIDE" /mnt/w
mount -t tmpfs tw-tmp /tmp
mount -t tmpfs tw-sys /sys
mount -t tmpfs tw-irq /proc/irq 2>/dev/null || true
for stub in $TW_STUBS; do
    for dir in /usr/sbin /usr/bin /sbin /bin; do
        if [ -f "$dir/$stub" ] && [ ! -L "$dir/$stub" ]; then mount --bind "$W/stubs/$stub" "$dir/$stub"; fi
    done
done
export PATH="$W/stubs:$PATH" HOME="$W/home"
mkdir -p "$W/home" "$W/run"
cd "$W/run"
bash "$W/artefact.sh" > "$W/out.log" 2>&1
echo "rc=$?" > "$W/rc"
fired=""
for f in /tmp/x "$W/run/x" "$W/x" "$W/home/x" /x; do [ -e "$f" ] && fired="$fired $f"; done
echo "$fired" > "$W/canaries"
'''


def prepare(work: Path) -> None:
    stubs = work / "stubs"
    stubs.mkdir(parents=True, exist_ok=True)
    for name in STUBS:
        stub = stubs / name
        stub.write_text(f'#!/bin/sh\nprintf "%s\\0" {name} "$@" >> {INSIDE}/calls.log\nprintf "\\n" >> '
                        f'{INSIDE}/calls.log\nexit 0\n')
        stub.chmod(0o755)


def calls(work: Path) -> list[list[bytes]]:
    log = work / "calls.log"
    if not log.exists():
        return []
    return [line.rstrip(b"\0").split(b"\0") for line in log.read_bytes().split(b"\n") if line]


def run(work: Path, script: str, timeout: float = 300) -> dict:
    """Run `script` (bash, cwd /mnt/w/run, paths under /mnt/w) in the sandbox; its log,
    exit status, canaries fired and stub calls."""
    if shutil.which("unshare") is None or os.geteuid() != 0:
        raise RuntimeError("the sandbox needs unshare and root")
    prepare(work)
    for stale in ("calls.log", "out.log", "rc", "canaries"):
        (work / stale).unlink(missing_ok=True)
    (work / "artefact.sh").write_text(script)
    env = {**os.environ, "TW_OUTSIDE": str(work), "TW_STUBS": " ".join(STUBS)}
    subprocess.run(["unshare", "--mount", "--pid", "--net", "--fork", "--mount-proc", "--propagation", "private",
                    "bash", "-c", WRAPPER], env=env, timeout=timeout, check=True)
    return {"rc": (work / "rc").read_text().strip(), "out": (work / "out.log").read_text(errors="replace"),
            "canaries": (work / "canaries").read_text().split(), "calls": calls(work),
            "reboots": [c for c in calls(work) if c and c[0] in (b"reboot", b"shutdown")]}
