#!/bin/bash
# Pin the completion (data) vectors of each mlx5 VF to one CPU of CPULIST each, round
# robin; control vectors (mlx5_*_eq) are left alone.
# Usage: pin-an-irqs.sh CPULIST VF...
set -eu
expand() {
    local part
    for part in ${1//,/ }; do
        if [[ $part == *-* ]]; then seq "${part%-*}" "${part#*-}"; else echo "$part"; fi
    done
}
cpus=($(expand "$1")); shift
for vf in "$@"; do
    i=0
    for irq in $(ls /sys/class/net/"$vf"/device/msi_irqs); do
        grep -q "mlx5_comp" <(grep "^ *${irq}:" /proc/interrupts) || continue
        echo "${cpus[$((i % ${#cpus[@]}))]}" > /proc/irq/"$irq"/smp_affinity_list
        i=$((i + 1))
    done
done
