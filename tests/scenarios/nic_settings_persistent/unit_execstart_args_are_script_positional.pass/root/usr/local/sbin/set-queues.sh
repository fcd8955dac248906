#!/bin/sh
# usage: set-queues.sh IFACE COUNT
exec /usr/sbin/ethtool -L "$1" combined "$2"
