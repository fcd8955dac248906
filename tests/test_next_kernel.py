"""The kernel GRUB boots next (facts/nextkernel.py, parsers/grub.py), rule by rule, each
judged from real file shapes written to a root directory. tests/scenarios/README.md ("The
next kernel") cites the GRUB and blscfg source of each rule."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from tunewatch.errors import FactError, ParseError
from tunewatch.facts.nextkernel import read_next_kernel
from tunewatch.host.fs import FS
from tunewatch.parsers.grub import bls_cmp, parse_grub_cfg, rpm_vercmp

sys.path.insert(0, str(Path(__file__).parent / "scenarios"))
import build_next_kernel as nk

A8, A14 = "6.8.0-1021-azure", "6.14.0-1012-azure"
EL5, EL6 = "5.14.0-427.13.1.el9_4.x86_64", "6.14.4-1.el9.elrepo.x86_64"


def root(tmp_path: Path, files: dict[str, str], links: dict[str, str] | None = None) -> FS:
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    for rel, target in (links or {}).items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, tmp_path / rel)
    return FS(str(tmp_path))


def ubuntu(tmp_path: Path, default: str = "0", env: str | None = None, kernels=(A14, A8)) -> FS:
    return root(tmp_path, {"boot/grub/grub.cfg": nk.ubuntu_grub_cfg(list(kernels), default),
                           "boot/grub/grubenv": env or nk.grubenv()})


def rhel(tmp_path: Path, env: str, grub_cfg: bool = True, default_grub: str = nk.RHEL_DEFAULT_GRUB) -> FS:
    files = {f"boot/loader/entries/{nk.MACHINE_ID}-{k}.conf": nk.bls_entry(k) for k in (EL5, EL6)}
    files.update({"boot/grub2/grubenv": env, "etc/default/grub": default_grub})
    if grub_cfg:
        files["boot/grub2/grub.cfg"] = nk.RHEL_GRUB_CFG
    return root(tmp_path, files)


def test_ubuntu_default_0_is_the_newest_kernel(tmp_path: Path) -> None:
    nxt = read_next_kernel(ubuntu(tmp_path), A8)
    assert nxt.release == A14 and not nxt.is_running
    assert nxt.describe().startswith(f"{A14} (the GRUB default entry 'Ubuntu', default=0 (boot/grub/grub.cfg:")
    assert nxt.describe().endswith(f"; running {A8})")


@pytest.mark.parametrize("default, want", [
    ("1>2", A8),  # upstream get_entry_number(): the number before '>', then the rest in the submenu
    ("1>0", A14),
    ("Advanced options for Ubuntu>Ubuntu, with Linux 6.8.0-1021-azure", A8),  # titles
    (f"gnulinux-advanced-{nk.UUID}>gnulinux-{A8}-advanced-{nk.UUID}", A8),  # ids
    ("1", A14),  # the submenu itself: `default` is unset inside it (upstream), so its entry 0
    ("7", A14),  # no such entry: run_menu() falls back to entry 0
    ("Ubuntu, with Linux 6.8.0-1021-azure", A14),  # a submenu's entry is not a top-level title
])
def test_ubuntu_default_by_number_title_id_and_path(tmp_path: Path, default: str, want: str) -> None:
    assert read_next_kernel(ubuntu(tmp_path, default), A8).release == want


def test_next_entry_wins_for_one_boot(tmp_path: Path) -> None:
    """00_header.in: `if [ "${next_entry}" ] ; then set default="${next_entry}"` (grub-reboot)."""
    fs = ubuntu(tmp_path, env=nk.grubenv(next_entry="1>2"))
    nxt = read_next_kernel(fs, A14)
    assert nxt.release == A8 and "next_entry=1>2" in nxt.how


def test_bls_saved_entry_and_blscfg_order(tmp_path: Path) -> None:
    saved = rhel(tmp_path / "a", nk.grubenv(saved_entry=f"{nk.MACHINE_ID}-{EL5}"))
    assert read_next_kernel(saved, EL5).release == EL5
    # no saved_entry: `default` is empty, so entry 0, the newest BLS entry (bls_cmp())
    assert read_next_kernel(rhel(tmp_path / "b", nk.grubenv()), EL5).release == EL6
    # a saved_entry naming a removed kernel selects nothing: entry 0 again
    gone = rhel(tmp_path / "c", nk.grubenv(saved_entry=f"{nk.MACHINE_ID}-5.14.0-70.13.1.el9_0.x86_64"))
    assert read_next_kernel(gone, EL5).release == EL6


def test_bls_without_grub_cfg_uses_etc_default_grub(tmp_path: Path) -> None:
    """No grub.cfg in the snapshot: GRUB_DEFAULT from etc/default/grub, then grub.d (later wins)."""
    fs = rhel(tmp_path, nk.grubenv(saved_entry=f"{nk.MACHINE_ID}-{EL5}"), grub_cfg=False)
    assert read_next_kernel(fs, EL5).release == EL5
    (tmp_path / "etc/default/grub.d").mkdir(parents=True)
    (tmp_path / "etc/default/grub.d/90-pin.cfg").write_text("GRUB_DEFAULT=0\n")
    assert read_next_kernel(FS(str(tmp_path)), EL5).release == EL6


def test_fedora_number_must_be_the_whole_value(tmp_path: Path) -> None:
    """rhboot menu.c get_entry_number_helper(): ids first, and a number followed by more
    than blanks is no number (so `1>0` selects nothing there: entry 0)."""
    fs = rhel(tmp_path, nk.grubenv(saved_entry="1>0"))
    assert read_next_kernel(fs, EL5).release == EL6
    fs = rhel(tmp_path / "b", nk.grubenv(saved_entry="1"))
    assert read_next_kernel(fs, EL5).release == EL5


def test_vmlinuz_link_without_grub_files(tmp_path: Path) -> None:
    fs = root(tmp_path, {}, {"boot/vmlinuz": "vmlinuz-6.12.0-160000.5-default"})
    nxt = read_next_kernel(fs, "6.4.0-150600.23.25-default")
    assert (nxt.release, nxt.how) == ("6.12.0-160000.5-default", "the boot/vmlinuz link")


def test_no_boot_files_assume_the_running_kernel(tmp_path: Path) -> None:
    nxt = read_next_kernel(root(tmp_path, {"etc/default/grub": "GRUB_DEFAULT=0\n"}), A8)
    assert nxt.is_running and nxt.describe() == f"{A8} (the running kernel: no GRUB, BLS or boot/vmlinuz files)"


@pytest.mark.parametrize("files, error", [
    ({"boot/grub/grub.cfg": "menuentry 'Ubuntu' {\n\tlinux /boot/vmlinuz-6.8.0-1021-azure\n"}, "never closed"),
    ({"boot/grub/grub.cfg": "menuentry 'Ubuntu {\n}\n"}, "unterminated ' quote"),
    ({"boot/grub/grub.cfg": "}\n"}, "without an open block"),
    ({"boot/grub/grub.cfg": "set default=saved\n" + nk.ubuntu_grub_cfg([A8]),
      "boot/grub/grubenv": "saved_entry=0\n"}, "not a GRUB environment block"),
])
def test_unparseable_files_are_errors_never_a_fallback(tmp_path: Path, files: dict, error: str) -> None:
    with pytest.raises(ParseError, match=error):
        read_next_kernel(root(tmp_path, files), A8)


def test_an_entry_that_boots_no_linux_is_an_error(tmp_path: Path) -> None:
    fs = root(tmp_path, {"boot/grub/grub.cfg": "set default=0\nmenuentry 'Windows' {\n\tchainloader +1\n}\n"})
    with pytest.raises(FactError, match="boots no Linux kernel"):
        read_next_kernel(fs, A8)


def test_grub_cfg_menu_shape() -> None:
    cfg = parse_grub_cfg(nk.ubuntu_grub_cfg([A14, A8]), "grub.cfg")
    assert [(i.kind, i.title) for i in cfg.items] == [
        ("menuentry", "Ubuntu"), ("submenu", "Advanced options for Ubuntu"), ("menuentry", "UEFI Firmware Settings")]
    assert cfg.items[0].linux == f"/boot/vmlinuz-{A14}" and cfg.items[0].id == f"gnulinux-simple-{nk.UUID}"
    assert [c.title for c in cfg.items[1].children][::2] == [f"Ubuntu, with Linux {k}" for k in (A14, A8)]
    assert [v for _, v in cfg.defaults] == ["${next_entry}", "0"]


@pytest.mark.parametrize("a, b, want", [
    ("1.0", "1.0", 0), ("1.0", "1.0~rc1", 1), ("2.0", "10", -1), ("1.0a", "1.0", 1), ("1.0", "1.0.0", -1),
    ("427.13.1.el9_4", "427.el9", 1), ("5.14.0", "6.14.4", -1), ("a", "1", -1), ("007", "7", 0),
])
def test_rpm_vercmp(a: str, b: str, want: int) -> None:
    assert rpm_vercmp(a, b) == want and rpm_vercmp(b, a) == -want


def test_bls_cmp_compares_name_version_release() -> None:
    mid = nk.MACHINE_ID
    assert bls_cmp(f"{mid}-{EL6}", f"{mid}-{EL5}") == 1
    assert bls_cmp(f"{mid}-5.14.0-427.13.1.el9_4.x86_64", f"{mid}-5.14.0-362.8.1.el9_3.x86_64") == 1
    assert bls_cmp(f"{mid}-0-rescue", f"{mid}-{EL5}") == -1  # the rescue entry sorts last


def test_rescue_entry_and_id_option_forms(tmp_path: Path) -> None:
    cfg = ("set default=rhel-rescue\nmenuentry 'Rescue' --id=rhel-rescue {\n"
           f"\tlinux /vmlinuz-0-rescue-{nk.MACHINE_ID} ro\n}}\n")
    with pytest.raises(FactError, match="boots no Linux kernel"):  # dracut's rescue copy: which kernel is unknown
        read_next_kernel(root(tmp_path, {"boot/grub2/grub.cfg": cfg}), EL5)


def test_facts_default_for_the_next_or_the_running_kernel(tmp_path: Path) -> None:
    """Facts.default: the next boot's default by default; `running=True` for a driver that
    comes back without a reboot (a re-added VF)."""
    from tunewatch.content.catalog import Content
    from tunewatch.facts.context import Facts
    ubuntu(tmp_path)
    (tmp_path / "proc/sys/kernel").mkdir(parents=True)
    (tmp_path / "proc/sys/kernel/osrelease").write_text(A8 + "\n")
    facts = Facts(FS(str(tmp_path)), defaults=Content().defaults)
    nxt, now = facts.default("hv_netvsc", "channels.combined", 128), \
        facts.default("hv_netvsc", "channels.combined", 128, running=True)
    assert (nxt.value, now.value) == ("32", "8")
    assert nxt.source.endswith(f"; running {A8})") and now.source == f"driver default (hv_netvsc, Linux 6.8: 8) of the running kernel {A8}"


def test_grub_cfg_wins_over_an_etc_default_grub_not_yet_applied(tmp_path: Path) -> None:
    """GRUB reads grub.cfg: an edit of etc/default/grub without update-grub changes nothing
    yet; the result says so."""
    fs = root(tmp_path, {"boot/grub/grub.cfg": nk.ubuntu_grub_cfg([A14, A8], "0"),
                         "etc/default/grub": "GRUB_DEFAULT=\"1>2\"\n"})
    nxt = read_next_kernel(fs, A8)
    assert nxt.release == A14
    assert "etc/default/grub says GRUB_DEFAULT=1>2, not in grub.cfg until update-grub/grub2-mkconfig runs" in nxt.how
    # the same value in both: nothing to say
    fs = root(tmp_path / "b", {"boot/grub/grub.cfg": nk.ubuntu_grub_cfg([A14, A8], "1>2"),
                               "etc/default/grub": "GRUB_DEFAULT=\"1>2\"\n"})
    assert (read_next_kernel(fs, A8).release, "says" in read_next_kernel(fs, A8).how) == (A8, False)
