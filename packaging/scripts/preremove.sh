#!/bin/sh
# On removal (not on an upgrade) stops the service with its drain and removes the unit and the
# private binary: `runner-manager service uninstall`. It refuses while runners are busy with jobs,
# so a removal never leaves a job without the daemon that ends its runner; config, state and runner
# users stay (a purge of the .deb removes them, postremove.sh).
# deb: $1 = remove, upgrade, deconfigure or failed-upgrade; rpm: $1 = 0 erase, 1 upgrade; apk: a version.
set -e
case "$1" in
upgrade | failed-upgrade | deconfigure | 1) exit 0 ;;
esac
[ -e /etc/systemd/system/runner-manager.service ] || exit 0
root=
[ -d /run/systemd/system ] || root="--root /"
# shellcheck disable=SC2086 # $root is empty or two words
runner-manager service uninstall $root --refuse-busy
