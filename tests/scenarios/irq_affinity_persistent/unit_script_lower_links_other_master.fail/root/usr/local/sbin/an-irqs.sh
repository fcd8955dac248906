#!/bin/bash
# usage: an-irqs.sh MASTER CPULIST: pin every MSI vector of the VF below MASTER to CPULIST
for lower in /sys/class/net/"$1"/lower_*; do
    for irq in $(ls "$lower"/device/msi_irqs); do
        echo "$2" > /proc/irq/$irq/smp_affinity_list
    done
done
