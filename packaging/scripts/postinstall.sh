#!/bin/sh
# deb postinst ("configure") and rpm %post: make the venv, then let systemd see the units.
# Units are not enabled: the administrator chooses the route (docs/install.md).
set -e
case "${1:-}" in
  abort-upgrade|abort-remove|abort-deconfigure) exit 0 ;;
esac
/opt/tunewatch/libexec/setup-venv
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload >/dev/null 2>&1 || :
fi
exit 0
