from __future__ import annotations
import pytest
from hypothesis import given, settings, strategies as st

from tunewatch.errors import ParseError
from tunewatch.parsers.interrupts import parse_interrupts

AZURE = """\
           CPU0       CPU1       CPU2       CPU3       \r
  0:         39          0          0          0   IO-APIC   2-edge      timer\r
  9:          0          0          0          0   IO-APIC   9-fasteoi   acpi\r
 16:          0          0          0          0   IO-APIC  16-fasteoi   ehci_hcd:usb1, i801_smbus\r
 24:    1064591          0          0          0  Hyper-V PCIe MSI 134250496-edge      mlx5_async0@pci:0002:00:02.0\r
 25:          0     531512          0          0  Hyper-V PCIe MSI 134250497-edge      mlx5_comp0@pci:0002:00:02.0\r
 26:          0          0          0          0   PCI-MSI 1572864-edge      mlx4-async@pci:0002:00:02.0\r
 30:          0          0          0          0   PCI-MSI 49152-edge\r
NMI:          0          0          0          0   Non-maskable interrupts\r
LOC:   15349845   14968612   14633050   14718254   Local timer interrupts\r
HYP:    4187117    4049203    4068484    4168287   Hypervisor callback interrupts\r
ERR:          0\r
MIS:          0\r
"""

VMWARE = """\
            CPU0       CPU1
  56:      15602          0   PCI-MSI 1572864-edge      eth0-rxtx-0
  57:          0       9921   PCI-MSI 1572865-edge      eth0-rxtx-1
  64:          0          0   PCI-MSI 1572872-edge      eth0-event-8
  40:          0       1297   PCI-MSIX-0000:00:03.0   1-edge      virtio2-input.0
  41:        976          0   PCI-MSIX-0000:00:03.0   2-edge      virtio2-output.0
  42:          0          0   PCI-MSIX-0000:00:03.0   0-edge      virtio2-config
  11:       1234       5678   GICv3  27 Level     arch_timer
  12:          0          0   GICv3  30 Level
  48:          3          0   xen-percpu    -virq      timer0
  70:         12          0   Hyper-V PCIe MSI 1-edge   hv_vmbus
"""


def test_azure_mlx5():
    result = parse_interrupts(AZURE, "proc/interrupts")
    assert result.cpus == 4
    assert sorted(result.irqs) == [0, 9, 16, 24, 25, 26, 30]
    irq = result.irqs[24]
    assert irq.chip == "Hyper-V PCIe MSI 134250496-edge"
    assert irq.name == "mlx5_async0@pci:0002:00:02.0"
    assert result.irqs[25].name == "mlx5_comp0@pci:0002:00:02.0"
    assert result.irqs[26].name == "mlx4-async@pci:0002:00:02.0"
    assert result.irqs[9].name == "acpi"
    assert result.irqs[16].name == "ehci_hcd:usb1, i801_smbus"
    assert result.irqs[16].chip == "IO-APIC 16-fasteoi"
    assert result.irqs[30].name == ""
    assert result.irqs[30].chip == "PCI-MSI 49152-edge"


def test_vmxnet3_virtio_arm_xen():
    irqs = parse_interrupts(VMWARE, "proc/interrupts").irqs
    assert irqs[56].name == "eth0-rxtx-0" and irqs[57].name == "eth0-rxtx-1"
    assert irqs[64].name == "eth0-event-8"
    assert irqs[40].name == "virtio2-input.0" and irqs[40].chip == "PCI-MSIX-0000:00:03.0 1-edge"
    assert irqs[11].name == "arch_timer" and irqs[11].chip == "GICv3 27 Level"
    assert irqs[12].name == "" and irqs[12].chip == "GICv3 30 Level"
    assert irqs[48].name == "timer0"
    assert irqs[70].name == "hv_vmbus"


def test_truncated_row_is_kept():
    irqs = parse_interrupts("   CPU0 CPU1 CPU2\n 24:  5  6\n", "p").irqs
    assert irqs[24].name == "" and irqs[24].chip == ""


@pytest.mark.parametrize("text, line", [
    ("", None),
    ("\n\n  \n", None),
    (" 24: 1 2 PCI-MSI 1-edge eth0\n", 1),
    ("hello world\n", 1),
    ("   CPU0 CPU1\n 24:\n", 2),
    ("   CPU0 CPU1\n 24:   PCI-MSI 1-edge eth0\n", 2),
    ("   CPU0 CPU1\n 0: 1 2 IO-APIC 2-edge timer\n 24: 12x 0 PCI-MSI 1-edge eth0\n", 3),
    ("   CPU0 CPU1\n 24: 1 -3 PCI-MSI 1-edge eth0\n", 2),
    ("   CPU0 CPU1\n 24: 1.5 3 PCI-MSI 1-edge eth0\n", 2),
])
def test_reject(text, line):
    with pytest.raises(ParseError) as e:
        parse_interrupts(text, "proc/interrupts")
    assert e.value.line == line


def test_real_proc_interrupts_parses():
    try:
        with open("/proc/interrupts") as f:
            text = f.read()
    except OSError:
        pytest.skip("no /proc/interrupts")
    assert parse_interrupts(text, "proc/interrupts").cpus >= 1


_name = st.from_regex(r"[a-z][a-z0-9_]{0,8}(-[a-z0-9]{1,5}){0,2}(@pci:0000:00:0[0-9]\.0)?", fullmatch=True)
_chip = st.sampled_from(["IO-APIC   2-edge", "PCI-MSI 1572864-edge", "Hyper-V PCIe MSI 134250496-edge",
                         "PCI-MSIX-0000:00:03.0   1-edge", "GICv3  27 Level"])


@st.composite
def _table(draw):
    cpus = draw(st.integers(1, 6))
    rows = draw(st.dictionaries(st.integers(0, 4000), st.tuples(
        st.lists(st.integers(0, 2**32 - 1), min_size=cpus, max_size=cpus), _chip, _name), max_size=8))
    return cpus, rows


@settings(max_examples=200, deadline=None)
@given(_table())
def test_generated_table_round_trips(table):
    cpus, rows = table
    text = " " * 11 + "".join(f"CPU{i:<8}" for i in range(cpus)) + "\n"
    for irq, (counts, chip, name) in rows.items():
        text += f"{irq:>4}: " + " ".join(f"{c:>10}" for c in counts) + f"  {chip}      {name}\n"
    text += "NMI:" + " 0" * cpus + "   Non-maskable interrupts\nERR:          0\n"
    result = parse_interrupts(text, "p")
    assert result.cpus == cpus
    assert {i: (r.chip.split(), r.name) for i, r in result.irqs.items()} == \
        {i: (chip.split(), name) for i, (_, chip, name) in rows.items()}


def _kernel_row(irq: int, counts, tail: str, new_kernel: bool) -> str:
    """show_interrupts(): `%*d:` then `%10u ` per CPU (before 6.x) or ` %10u` and a space."""
    if new_kernel:
        return f"{irq:>3}:" + "".join(f" {c:>10}" for c in counts) + " " + tail + "\n"
    return f"{irq:>3}: " + "".join(f"{c:>10} " for c in counts) + tail + "\n"


@pytest.mark.parametrize("new_kernel", [False, True])
def test_kernel_layouts_of_both_eras(new_kernel):
    header = "     " + "".join(f"CPU{i:<7} " for i in range(3)) + "\n"
    text = header + _kernel_row(24, (1, 22, 4294967295), " Hyper-V PCIe MSI 134250496-edge      mlx5_comp0@pci:0002:00:02.0",
                                new_kernel) + _kernel_row(11, (0, 0, 0), "  GICv3  27 Level     arch_timer", new_kernel)
    irqs = parse_interrupts(text, "p").irqs
    assert irqs[24].name == "mlx5_comp0@pci:0002:00:02.0" and irqs[24].chip == "Hyper-V PCIe MSI 134250496-edge"
    assert irqs[11].name == "arch_timer" and irqs[11].chip == "GICv3 27 Level"


@pytest.mark.parametrize("bad", ["     1x345", "    -12345", "    1.2345", "   ١٢٣"])
def test_garbage_inside_an_aligned_column_is_rejected(bad):
    """The aligned fast path must not wave through what the word-by-word path rejects."""
    header = "     " + "".join(f"CPU{i:<7} " for i in range(2)) + "\n"
    row = f" 24: {bad:>10} {0:>10}   PCI-MSI 1-edge  eth0\n"
    with pytest.raises(ParseError) as e:
        parse_interrupts(header + row, "p")
    assert e.value.line == 2


def test_streamed_file_reads_like_text(tmp_path):
    from tunewatch.host.fs import FS
    from tunewatch.facts.irqs import read_interrupts
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "interrupts").write_text(AZURE.replace("\r\n", "\n"))
    streamed = read_interrupts(FS(str(tmp_path)))
    assert streamed == parse_interrupts(AZURE, "proc/interrupts")


def test_only_the_wanted_rows_are_parsed(tmp_path):
    """The scan asks for the NICs' IRQs only (Facts.interrupts passes their msi_irqs): a
    garbled row of another IRQ is not read, a garbled wanted row is still an error, and the
    rows read are what the whole parse gives for them, however the file is chunked."""
    from tunewatch.facts.irqs import read_interrupts
    from tunewatch.host.fs import FS

    garbled = AZURE.replace("  9:          0", "  9:         0x", 1)
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "interrupts").write_text(garbled)
    with pytest.raises(ParseError) as e:
        parse_interrupts(garbled, "proc/interrupts")
    assert e.value.line == 3
    wanted = read_interrupts(FS(str(tmp_path)), {24, 25, 30})
    whole = parse_interrupts(AZURE, "proc/interrupts")
    assert wanted.irqs == {irq: whole.irqs[irq] for irq in (24, 25, 30)} and wanted.cpus == 4
    with pytest.raises(ParseError):
        read_interrupts(FS(str(tmp_path)), {9, 24})


def test_rows_split_across_chunks():
    from tunewatch.parsers.interrupts import parse_interrupt_lines, stream_rows

    data = ("\ufeff" + AZURE).encode()
    for size in (1, 7, 64, len(data)):
        chunks = [data[i:i + size] for i in range(0, len(data), size)]
        for wanted in (None, {16, 26}):
            got = parse_interrupt_lines(stream_rows(chunks, "p", wanted), "p")
            whole = parse_interrupts(AZURE, "p")
            assert got.irqs == ({k: whole.irqs[k] for k in wanted} if wanted else whole.irqs), (size, wanted)
