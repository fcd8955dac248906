"""The bash that pins a NIC's data IRQs, shared by the runtime step (bash script, playbook)
and the script a boot-time unit or udev rule runs.

It finds the IRQs when it runs, as the irq_affinity check finds them (kinds/nic_irqs.py):
the numbers under the interface's `device/msi_irqs` (and the VFs' under `lower_*`), minus
stale entries without /proc/irq/N, minus control vectors whose /proc/interrupts name matches
the content's control_irq_patterns. Every path is under "$R" (TUNEWATCH_ROOT) so that the
step can be proved on a copy of a snapshot.
"""

from __future__ import annotations

IRQ_FUNCTION = r'''# tw_irqs CPULIST IFACE CONTROL: pin each data IRQ of IFACE (and of the VFs under it, lower_*)
# to one CPU of CPULIST, round robin in IRQ order; IRQs whose /proc/interrupts name matches
# CONTROL (an ERE) are control vectors and left alone. IRQs are read now, not at scan time.
tw_irqs() {
    local cpulist=$1 iface=$2 control=$3 part first last cpu dev msi irq name want now n=0 pinned=0
    local -a cpus=() parts=() irqs=()
    IFS=, read -ra parts <<< "$cpulist"
    for part in "${parts[@]}"; do
        first=${part%-*} last=${part#*-}
        for ((cpu = first; cpu <= last; cpu++)); do cpus+=("$cpu"); done
    done
    if [ "${#cpus[@]}" = 0 ]; then tw_say "no CPUs to pin $iface to" >&2; return 1; fi
    for dev in "$R/sys/class/net/$iface" "$R/sys/class/net/$iface"/lower_*; do
        [ -e "$dev" ] || continue
        msi="$dev/device/msi_irqs"
        [ -d "$msi" ] || msi="$dev/device/../msi_irqs"  # virtio: the PCI parent holds them
        [ -d "$msi" ] || continue
        mapfile -t irqs < <(find "$msi/" -mindepth 1 -maxdepth 1 -printf '%f\n' | grep -xE '[0-9]+' | sort -n)
        for irq in "${irqs[@]}"; do
            [ -e "$R/proc/irq/$irq/smp_affinity_list" ] || continue  # stale entry (mlx4): no live vector
            name=$(awk -v irq="$irq:" '$1 == irq { print $NF }' "$R/proc/interrupts")
            if [ -z "$name" ]; then
                tw_say "IRQ $irq of $iface has no row in /proc/interrupts: left alone" >&2
                continue
            fi
            if [[ $name =~ $control ]]; then continue; fi
            want=${cpus[n % ${#cpus[@]}]}
            n=$((n + 1))
            now=$(cat "$R/proc/irq/$irq/smp_affinity_list")
            if [ "$now" != "$want" ]; then
                printf '%s\n' "$want" > "$R/proc/irq/$irq/smp_affinity_list"
                pinned=$((pinned + 1))
            fi
        done
    done
    if [ "$pinned" -gt 0 ]; then tw_changed "pinned $pinned of $n data IRQs of $iface to CPUs $cpulist"; fi
}
'''

IRQ_SCRIPT_TEXT = r"""#!/bin/bash
# written by tunewatch remediate: pin every data IRQ of an interface (and of the VFs under it,
# lower_* links) to one CPU of CPULIST each, round robin; control vectors (names matching
# CONTROL, an extended regular expression) are left alone. Run by a unit at boot, or by a
# udev rule for each Accelerated Networking VF as it appears (IFACE is then the VF).
# usage: tunewatch_set_irq_affinity_cpulist.sh CPULIST IFACE [CONTROL]
set -eu
R=${TUNEWATCH_ROOT:-}
tw_say() { printf 'tunewatch: %s\n' "$*"; }
tw_changed() { tw_say "$*"; }
""" + IRQ_FUNCTION + """tw_irqs "$1" "$2" "${3:-^$}\""""
