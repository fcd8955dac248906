"""Fault cases with the real thing: a FUSE file system that never answers, links of every
shape onto it, FIFOs, device nodes, huge and hostile files. Shared by tests/faults/ (which
assert) and benchmarks/faults.py (which prints the table).

A blocking FUSE server (fusepy over libfuse2, subtype `sshfs`, so mountinfo lists it as
`fuse.sshfs`) is mounted only inside a private mount namespace (`unshare -m
--propagation private`): nothing the host sees changes, and the mount dies with the
namespace at the latest. Inside, a driver (this file, `ns` mode) mounts, runs each case
as a subprocess with a hard timeout, then unmounts lazily and kills the server by its pid.

- snapshot cases: a copy of the sas-anf example whose mountinfo lists /opt/sas as `nfs`
  while <root>/opt/sas is the hung FUSE mount: links and paths of every shape lead there;
- live cases: a copy of /etc bind-mounted over /etc in the namespace, the hung mount at
  /etc/tw-hung listed by the kernel as fuse.sshfs, the same shapes under the live root /;
- watchdog: a FUSE mount of a type nobody lists (fuse.tw-unknown) over a snapshot's
  proc/irq: the scan must end at its --timeout with `error` results, not hang.

Run as `python3 hazards.py serve MOUNTPOINT SUBTYPE` it is the FUSE server; as
`python3 hazards.py ns` (JSON spec on stdin) it is the namespace driver.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
EXAMPLE = os.path.join(TESTS, "snapshots", "examples", "sas-anf")
PROFILE = "azure-sas-grid-anf"
CASE_TIMEOUT = 60  # a case still running then is killed and reported as "hung"
SCAN_TIMEOUT = "20s"  # the scanner's own limit: a case must end long before CASE_TIMEOUT

NFS_LINE = ("122 23 0:55 / /opt/sas rw,noatime shared:82 - nfs 10.0.2.4:/sasbin rw,vers=3,rsize=65536,"
            "wsize=65536,hard,proto=tcp,nconnect=8,addr=10.0.2.4\n")


def fuse_available() -> str | None:
    """None when the FUSE cases can run here, else why not."""
    if not os.path.exists("/dev/fuse"):
        return "/dev/fuse is missing"
    if not shutil.which("unshare") or os.geteuid() != 0:
        return "needs root and unshare(1) for a private mount namespace"
    try:
        import fuse  # noqa: F401 - fusepy
    except (ImportError, OSError) as e:
        return f"fusepy/libfuse2 unavailable: {e}"
    return None


# -- the FUSE server --------------------------------------------------------------------
def serve(mountpoint: str, subtype: str) -> None:
    import threading

    import fuse

    class Hung(fuse.Operations):
        """Every request waits forever, like a server that went away."""

        def __call__(self, op, *args):
            if op in ("init", "destroy"):
                return None
            threading.Event().wait()

    fuse.FUSE(Hung(), mountpoint, foreground=True, nothreads=False, fsname="tw-hung", subtype=subtype,
              nonempty=True)


# -- the namespace driver ---------------------------------------------------------------
def _mounted(mountpoint: str) -> bool:
    with open("/proc/self/mountinfo") as f:  # reads the table, never the mount
        return any(line.split()[4] == mountpoint for line in f)


def _pdeathsig() -> None:
    import ctypes
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: die with the driver


def _materialise(case: dict) -> list[str]:
    made = []
    for path, target in case.get("links", []):
        if os.path.lexists(path):
            continue  # two shapes share a link
        os.makedirs(os.path.dirname(path), exist_ok=True)
        os.symlink(target, path)
        made.append(path)
    for path, text, mode in case.get("files", []):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, mode)
        made.append(path)
    return made


def ns_main(spec: dict) -> list[dict]:
    servers: list[tuple[str, subprocess.Popen]] = []
    results = []
    try:
        for src, dst in spec.get("binds", []):
            subprocess.run(["mount", "--bind", src, dst], check=True, timeout=10)
        for mountpoint, subtype in spec.get("fuse", []):
            proc = subprocess.Popen([sys.executable, __file__, "serve", mountpoint, subtype],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=_pdeathsig)
            servers.append((mountpoint, proc))
            deadline = time.monotonic() + 15
            while not _mounted(mountpoint):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"FUSE mount at {mountpoint} failed: {proc.stderr.read().decode()[-500:]}")
                time.sleep(0.05)
        for case in spec["cases"]:
            if results and results[-1]["rc"] is None:
                results.append({"name": case["name"], "rc": None, "stdout": "", "seconds": 0.0,
                                "stderr": "not run: an earlier case hung and the mounts were aborted"})
                continue
            made = _materialise(case)
            t0 = time.monotonic()
            proc = subprocess.Popen(case["argv"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                out, err = proc.communicate(timeout=case.get("timeout", CASE_TIMEOUT))
                outcome = {"rc": proc.returncode, "stdout": out[-200_000:], "stderr": err[-20_000:]}
            except subprocess.TimeoutExpired:
                # A process blocked in a FUSE request cannot even be killed until the request
                # ends: end the servers (the kernel then fails every pending request), then it.
                for _, server in servers:
                    server.kill()
                proc.kill()
                proc.communicate(timeout=30)
                outcome = {"rc": None, "stdout": "", "stderr": "killed: still running at the case timeout"}
            outcome.update(name=case["name"], seconds=round(time.monotonic() - t0, 3))
            results.append(outcome)
            for path in made:
                os.unlink(path)
    finally:
        for mountpoint, proc in servers:
            subprocess.run(["umount", "-l", mountpoint], capture_output=True, timeout=10)
            proc.kill()
            proc.wait(timeout=10)
    return results


def run_in_namespace(spec: dict) -> list[dict]:
    run = subprocess.run(["unshare", "-m", "--propagation", "private", sys.executable, __file__, "ns"],
                         input=json.dumps(spec), capture_output=True, text=True,
                         timeout=CASE_TIMEOUT * (len(spec["cases"]) + 2))
    if run.returncode != 0:
        raise RuntimeError(f"namespace driver failed ({run.returncode}): {run.stderr[-2000:]}")
    return json.loads(run.stdout)


# -- the cases ------------------------------------------------------------------------
def _tunewatch(*args: str) -> list[str]:
    return [sys.executable, "-m", "tunewatch.cli.main", *args]


UNIT = "[Unit]\nDescription=pin IRQs\n[Service]\nType=oneshot\nExecStart={exec} eth0\n[Install]\nWantedBy=multi-user.target\n"


def shapes(root: str, mount: str) -> list[tuple[str, list, list, bool]]:
    """(name, links, files, reads_fail) for each way a path can lead onto the mount at
    /`mount` (root-relative, e.g. "opt/sas"); `root` is where the files go (the snapshot,
    or / in the namespace). reads_fail: the scan must say `error` (a script a unit runs
    from a network mount is skipped, by design, not an error)."""
    m = "/" + mount
    root = root.rstrip("/")
    wants = f"{root}/etc/systemd/system/multi-user.target.wants"

    def unit(name: str, exec_path: str, extra_links=()):
        return ([[f"{wants}/{name}", f"/etc/systemd/system/{name}"], *extra_links],
                [[f"{root}/etc/systemd/system/{name}", UNIT.format(exec=exec_path), 0o644]])

    top, rest = mount.split("/", 1)
    out = []
    for name, exec_path, links in (
            ("ExecStart on the mount", f"{m}/bin/pin.sh", []),
            ("ExecStart through a file link", "/etc/tw-pin.sh", [[f"{root}/etc/tw-pin.sh", f"{m}/bin/pin.sh"]]),
            ("ExecStart through a directory link", "/etc/tw-bin/pin.sh", [[f"{root}/etc/tw-bin", f"{m}/bin"]]),
            ("ExecStart path with //", f"/{top}//{rest}//bin/pin.sh", []),
            ("ExecStart path with /./", f"/{top}/./{rest}/./bin/pin.sh", []),
            ("ExecStart path with /../", f"/usr/../{mount}/bin/pin.sh", [])):
        unit_links, files = unit("tw-pin.service", exec_path, links)
        out.append((name, unit_links, files, False))
    nm = f"{root}/etc/NetworkManager/dispatcher.d"
    out += [
        ("dispatcher.d script link", [[f"{nm}/50-tw", f"{m}/dispatch.sh"]], [], True),
        ("dispatcher.d/pre-up.d directory link", [[f"{nm}/pre-up.d", f"{m}/pre-up.d"]], [], True),
        ("udev rule link", [[f"{root}/etc/udev/rules.d/98-tw.rules", f"{m}/udev/98-tw.rules"]], [], True),
        ("wants link to a unit file on the mount",
         [[f"{wants}/tw-remote.service", f"{m}/units/tw-remote.service"]], [], True),
        ("unit file link in etc/systemd/system", [[f"{root}/etc/systemd/system/tw-remote.service",
                                                   f"{m}/units/tw-remote.service"],
                                                  [f"{wants}/tw-remote.service", "/etc/systemd/system/tw-remote.service"]],
         [], True),
        ("sysctl.d link", [[f"{root}/etc/sysctl.d/99-tw.conf", f"{m}/sysctl.conf"]], [], True),
        ("modprobe.d link", [[f"{root}/etc/modprobe.d/tw.conf", f"{m}/modprobe.conf"]], [], True),
    ]
    return out


def build_snapshot(work: str, name: str = "snap") -> str:
    root = os.path.join(work, name)
    shutil.copytree(EXAMPLE, root, symlinks=True)
    with open(os.path.join(root, "proc/self/mountinfo"), "a") as f:
        f.write(NFS_LINE)
    os.makedirs(os.path.join(root, "opt/sas"))
    os.makedirs(os.path.join(root, "etc/tw-host"))
    for d in ("etc/NetworkManager/dispatcher.d", "etc/udev/rules.d", "etc/sysctl.d", "etc/modprobe.d"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    return root


LIVE_FACTS = """
import json
from tunewatch.content.catalog import Content
from tunewatch.errors import TunewatchError
from tunewatch.facts.context import Facts
from tunewatch.host.fs import FS
facts, out = Facts(FS("/"), defaults=Content().defaults), {}  # content's layouts: where tuned keeps profiles
for name in ("boot_scripts", "persisted_ethtool", "sysctl_configured"):
    try:
        getattr(facts, name)
        out[name] = "read"
    except TunewatchError as e:
        out[name] = "error: " + str(e)
for unit in ("tw-pin.service", "tw-remote.service"):
    try:
        out[unit] = facts.unit_state(unit).state
    except TunewatchError as e:
        out[unit] = "error: " + str(e)
print(json.dumps(out))
"""


def fuse_cases(work: str) -> list[dict]:
    """Every link shape onto a hung mount, in a snapshot (nfs in its mountinfo) and on the
    live root (fuse.sshfs in the kernel's), plus collect of both and the watchdog case."""
    snap = build_snapshot(work)
    etc_copy = os.path.join(work, "etc")
    shutil.copytree("/etc", etc_copy, symlinks=True, ignore_dangling_symlinks=True,
                    ignore=shutil.ignore_patterns("mtab"))
    for d in ("tw-hung", "NetworkManager/dispatcher.d", "udev/rules.d", "sysctl.d", "modprobe.d",
              "systemd/system/multi-user.target.wants"):
        os.makedirs(os.path.join(etc_copy, d), exist_ok=True)
    watch = build_snapshot(work, "watchdog")
    cases = []
    snap_shapes = shapes(snap, "opt/sas")
    for name, links, files, _ in snap_shapes:
        cases.append({"name": f"snapshot scan: {name}", "links": links, "files": files,
                      "argv": _tunewatch("scan", "--root", snap, "--profile", PROFILE, "--format", "json",
                                         "--timeout", SCAN_TIMEOUT)})
    nm = os.path.join(snap, "etc/NetworkManager/dispatcher.d")
    cases.append({"name": "snapshot scan: mount only the scanning host lists (fuse.sshfs in <root>/etc/tw-host)",
                  "links": [[f"{nm}/60-tw", "/etc/tw-host/dispatch.sh"]], "files": [],
                  "argv": _tunewatch("scan", "--root", snap, "--profile", PROFILE, "--format", "json",
                                     "--timeout", SCAN_TIMEOUT)})
    every_link = [link for _, links, _, _ in snap_shapes[1:] for link in links if "tw-pin" not in link[0]]
    cases.append({"name": "snapshot collect: every shape", "links": every_link,
                  "files": snap_shapes[0][2], "argv": _tunewatch("collect", "--root", snap, os.path.join(work, "c1"))})
    live_shapes = shapes("/", "etc/tw-hung")
    for name, links, files, _ in live_shapes:
        cases.append({"name": f"live facts: {name}", "links": links, "files": files,
                      "argv": [sys.executable, "-c", LIVE_FACTS]})
    every_live = [link for _, links, _, _ in live_shapes[1:] for link in links if "tw-pin" not in link[0]]
    cases.append({"name": "live collect: every shape", "links": every_live, "files": live_shapes[0][2],
                  "argv": _tunewatch("collect", os.path.join(work, "c2"))})
    cases.append({"name": "watchdog: hung fuse.tw-unknown over proc/irq, --timeout 3s",
                  "argv": _tunewatch("scan", "--root", watch, "--profile", PROFILE, "--format", "json",
                                     "--timeout", "3s")})
    spec = {"binds": [[etc_copy, "/etc"]],
            "fuse": [[os.path.join(snap, "opt/sas"), "sshfs"], [os.path.join(snap, "etc/tw-host"), "sshfs"],
                     ["/etc/tw-hung", "sshfs"],
                     [os.path.join(watch, "proc/irq"), "tw-unknown"]],
            "cases": cases}
    results = run_in_namespace(spec)
    reads_fail = {f"snapshot scan: {n}": rf for n, _, _, rf in snap_shapes}
    reads_fail["snapshot scan: mount only the scanning host lists (fuse.sshfs in <root>/etc/tw-host)"] = True
    reads_fail.update({f"live facts: {n}": rf for n, _, _, rf in live_shapes})
    for r in results:
        r["must_error"] = reads_fail.get(r["name"], False)
    return results


# -- special files and hostile content (no FUSE needed) ----------------------------------------
BILLION_LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi")) + "profile: *i\n"
DEEP = "profile: " + "[" * 5000 + "]" * 5000 + "\n"


def _run(name: str, argv: list[str], **kw) -> dict:
    t0 = time.monotonic()
    try:
        run = subprocess.run(argv, capture_output=True, text=True, timeout=CASE_TIMEOUT, **kw)
        out = {"rc": run.returncode, "stdout": run.stdout[-200_000:], "stderr": run.stderr[-20_000:]}
    except subprocess.TimeoutExpired:
        out = {"rc": None, "stdout": "", "stderr": "killed: still running at the case timeout"}
    out.update(name=name, seconds=round(time.monotonic() - t0, 3))
    return out


def file_cases(work: str) -> list[dict]:
    """FIFOs, a /dev/zero-like device node, huge files and a hostile cpulist in a snapshot;
    content bombs as tailoring, waivers, check, profile and schema files."""
    from tunewatch.content.catalog import default_content_dir

    results = []

    def snapshot_case(name, mutate, expect_error_in: str):
        root = build_snapshot(work, f"s{len(results)}")
        mutate(root)
        r = _run(name, _tunewatch("scan", "--root", root, "--profile", PROFILE, "--format", "json",
                                  "--timeout", SCAN_TIMEOUT))
        r["must_error"], r["expect"] = True, expect_error_in
        results.append(r)

    def replace(root, rel, make):
        path = os.path.join(root, rel)
        if os.path.lexists(path):
            os.unlink(path)
        make(path)

    snapshot_case("FIFO as proc/interrupts", lambda r: replace(r, "proc/interrupts", os.mkfifo), "FIFO")
    snapshot_case("FIFO as an IRQ's smp_affinity_list",
                  lambda r: [replace(r, f"proc/irq/{n}/smp_affinity_list", os.mkfifo)
                             for n in os.listdir(os.path.join(r, "proc/irq")) if n.isdigit()], "FIFO")
    snapshot_case("char device 1:5 (/dev/zero) as proc/interrupts",
                  lambda r: replace(r, "proc/interrupts", lambda p: os.mknod(p, 0o444 | 0o020000, os.makedev(1, 5))),
                  "character device")
    snapshot_case("char device 1:5 as a NIC's operstate",
                  lambda r: replace(r, "sys/class/net/eth0/operstate",
                                    lambda p: os.mknod(p, 0o444 | 0o020000, os.makedev(1, 5))), "character device")

    def sparse(size):
        def make(path):
            with open(path, "wb") as f:
                f.truncate(size)
        return make

    snapshot_case("1 GiB sparse proc/interrupts (no newline)", lambda r: replace(r, "proc/interrupts", sparse(1 << 30)),
                  "line longer")
    snapshot_case("1 GiB sparse sysfs value (numa_node)",
                  lambda r: [replace(r, os.path.relpath(os.path.join(dp, "numa_node"), r), sparse(1 << 30))
                             for dp, _, fs in os.walk(os.path.join(r, "sys/devices")) if "numa_node" in fs],
                  "larger than")
    snapshot_case("cpulist of 20,000 huge ranges",
                  lambda r: [open(os.path.join(r, f"proc/irq/{n}/smp_affinity_list"), "w").write(
                      ",".join(["0-8191"] * 20_000) + "\n")
                      for n in os.listdir(os.path.join(r, "proc/irq")) if n.isdigit()], "CPU")

    def content_case(name, build, flag_or_none, expect: str):
        path = os.path.join(work, f"c{len(results)}")
        args = build(path)
        r = _run(name, _tunewatch("scan", "--root", EXAMPLE, "--profile", PROFILE, *args),
                 env={**os.environ, "XDG_CACHE_HOME": os.path.join(work, "cache")})
        r["content"], r["expect"] = True, expect
        results.append(r)

    def user_file(flag, text=None, maker=None):
        def build(path):
            if maker:
                maker(path)
            else:
                with open(path, "w") as f:
                    f.write(text)
            return [flag, path]
        return build

    content_case("billion laughs as --tailoring", user_file("--tailoring", "tailoring: t\n" + BILLION_LAUGHS), None,
                 "YAML nodes")
    content_case("billion laughs as --waivers", user_file("--waivers", "waivers: []\n" + BILLION_LAUGHS), None,
                 "YAML nodes")
    content_case("5,000-level nesting as --tailoring", user_file("--tailoring", "tailoring: t\n" + DEEP), None, "nested")
    content_case("50 MB --tailoring", user_file("--tailoring", maker=lambda p: open(p, "w").write(
        "tailoring: t\nprofile: azure-sas-grid-anf\n" + "# padding\n" * (5 << 20))), None, "larger than")
    content_case("FIFO as --tailoring", user_file("--tailoring", maker=os.mkfifo), None, "FIFO")

    def content_copy(mutate):
        def build(path):
            shutil.copytree(default_content_dir(), path)
            mutate(path)
            return ["--content", path]
        return build

    def bomb_check(path):
        with open(os.path.join(path, "system", "tw-bomb.yaml"), "w") as f:
            f.write("id: tw-bomb\n" + BILLION_LAUGHS)

    def bomb_profile(path):
        with open(os.path.join(path, "profiles", "tw-bomb.yaml"), "w") as f:
            f.write("id: tw-bomb\n" + DEEP.replace("profile:", "select:"))

    def no_id(path):
        schema = os.path.join(path, "schema", sorted(os.listdir(os.path.join(path, "schema")))[-1])
        with open(schema) as f:
            data = json.load(f)
        data.pop("$id", None)
        with open(schema, "w") as f:
            json.dump(data, f)

    content_case("billion laughs in a check file", content_copy(bomb_check), None, "YAML nodes")
    content_case("5,000-level nesting in a profile", content_copy(bomb_profile), None, "nested")
    content_case("schema file without $id", content_copy(no_id), None, "$id")
    return results


def judge(r: dict) -> tuple[bool, str]:
    """(ok, outcome text) for one case result: bounded, no traceback, the right error."""
    if r["rc"] is None:
        return False, "HUNG (killed)"
    if "Traceback" in r["stderr"]:
        return False, f"traceback: {r['stderr'].strip().splitlines()[-1][:80]}"
    if r.get("content"):
        ok = r["rc"] == 1 and r.get("expect", "") in r["stderr"]
        return ok, f"exit {r['rc']}: {r['stderr'].strip().splitlines()[-1][:110] if r['stderr'].strip() else ''}"
    if r["name"].startswith("live facts"):
        facts = json.loads(r["stdout"])
        errors = sorted(k for k, v in facts.items() if v.startswith("error"))
        ok = bool(errors) if r["must_error"] else True
        return ok, f"error: {', '.join(errors)}" if errors else "read (script on the mount skipped)"
    if "collect" in r["name"]:
        skipped = sum("network file system" in line for line in r["stderr"].splitlines())
        return r["rc"] == 0, f"exit {r['rc']}, {skipped} path(s) on the mount skipped"
    if r["rc"] not in (0, 2):
        return False, f"exit {r['rc']}: {r['stderr'][-200:]}"
    report = json.loads(r["stdout"])
    errors = [(c["check"], o["message"]) for c in report["results"] for o in c["objects"] if o["status"] == "error"]
    expect = r.get("expect", "network file system" if r.get("must_error") else "")
    if r["name"].startswith("watchdog"):
        expect = "timeout"
    hits = [cid for cid, msg in errors if expect and expect in msg]
    ok = bool(hits) if (r.get("must_error") or expect) else True
    if hits:
        return ok, f"error: {', '.join(sorted(set(hits)))}"
    return ok, f"exit {r['rc']}, no error result" + (f" (expected '{expect}')" if expect else "")


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        serve(sys.argv[2], sys.argv[3])
    elif sys.argv[1:2] == ["ns"]:
        print(json.dumps(ns_main(json.load(sys.stdin))))
    else:
        sys.exit(__doc__)
