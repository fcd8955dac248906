#!/bin/sh
# deb prerm and rpm %preun: on removal (not upgrade) stop the units and drop the venv that
# postinstall made (dpkg/rpm do not know its files).
set -e
case "${1:-}" in
  remove|purge|0)
    if [ -d /run/systemd/system ]; then
      systemctl disable --now tunewatch.service tunewatch-textfile.timer tunewatch-textfile.service >/dev/null 2>&1 || :
    fi
    rm -rf /opt/tunewatch/venv
    ;;
esac
exit 0
