#!/bin/sh
# Installs the service from the package's binary, so the unit has one owner: `runner-manager
# service install` (docs/upgrades.md). It runs when the unit does not exist yet (a first install,
# or a reinstall after a remove); on an upgrade the unit exists and the running daemon takes the
# new /usr/bin/runner-manager itself once no job runs, so nothing is done here.
# deb: $1 = configure (others: abort-*); rpm: $1 = 1 install, 2 upgrade; apk: no argument.
set -e
case "$1" in
abort-*) exit 0 ;;
esac
unit=/etc/systemd/system/runner-manager.service
[ -e "$unit" ] && exit 0
# Without systemd as PID 1 (a chroot, an image build, a container) no systemctl is run: --root /
# writes the same files and skips it.
root=
[ -d /run/systemd/system ] || root="--root /"
# shellcheck disable=SC2086 # $root is empty or two words
runner-manager service install $root --source /usr/bin/runner-manager
echo "runner-manager: the service is installed, not started: add a [[target]] and a credential to"
echo "  /etc/runner-manager/config.toml, run runner-manager validate, then runner-manager service start"
