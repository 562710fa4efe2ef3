#!/bin/sh
# A purge (deb) removes what the package and its daemon added beyond the package's own files: the
# state directory (journal, credentials stored by `auth login`, runner packages), the runners'
# directories beside it (runner.RuntimeRootFor: /var/lib/runner-manager-runners), the config
# directory, and the per-slot runner users (found by the comment useradd gave them, since the
# config naming their prefix is gone by now). A remove keeps all of it, as rpm and apk do.
set -e
[ "$1" = purge ] || exit 0
for u in $(awk -F: '$5 ~ /^runner-manager runner slot [0-9]+$/ { print $1 }' /etc/passwd); do
	userdel --force --remove "$u" || [ $? -eq 12 ] # 12: its home was already gone
done
rm -rf /var/lib/runner-manager /var/lib/runner-manager-runners /etc/runner-manager
