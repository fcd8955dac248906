#!/bin/sh
# pin every MSI vector of the interface named in $1 to the CPUs in $2
dev="$1"
cpus="$2"
for irq in $(ls /sys/class/net/"$dev"/device/msi_irqs); do
    echo "$cpus" > /proc/irq/"$irq"/smp_affinity_list
done
