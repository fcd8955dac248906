#!/bin/sh
# usage: pin-one.sh IFACE
/usr/local/sbin/set_irq_affinity_cpulist.sh 2-7 "$1"
