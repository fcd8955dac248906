#!/bin/bash
# pin the data IRQs of the NICs given to CPUs $1 (usage: pin-nic-irqs.sh 2-7 enP1s1)
cpus=$1; shift
for ifc in "$@"; do
    for irq in $(ls /sys/class/net/"$ifc"/device/msi_irqs); do
        echo "$cpus" > /proc/irq/"$irq"/smp_affinity_list
    done
done
