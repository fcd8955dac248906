#!/bin/bash
# Pin each vmxnet3 rx/tx queue IRQ of the given NICs to one CPU of CPULIST, round robin.
# Usage: vmxnet3-irq-affinity.sh CPULIST IFACE...
set -eu
expand() {  # 2-5,8 -> 2 3 4 5 8
    local part
    for part in ${1//,/ }; do
        if [[ $part == *-* ]]; then seq "${part%-*}" "${part#*-}"; else echo "$part"; fi
    done
}
cpus=($(expand "$1")); shift
for ifc in "$@"; do
    i=0
    for irq in $(ls /sys/class/net/"$ifc"/device/msi_irqs); do
        grep -q "[[:space:]]${ifc}-rxtx-" <(grep "^ *${irq}:" /proc/interrupts) || continue
        echo "${cpus[$((i % ${#cpus[@]}))]}" > /proc/irq/"$irq"/smp_affinity_list
        i=$((i + 1))
    done
done
