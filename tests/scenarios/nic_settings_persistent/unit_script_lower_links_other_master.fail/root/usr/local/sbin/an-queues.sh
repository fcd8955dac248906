#!/bin/bash
# usage: an-queues.sh MASTER COUNT
for lower in /sys/class/net/"$1"/lower_*; do
    vf=${lower##*/lower_}
    /usr/sbin/ethtool -L "$vf" combined "$2"
done
