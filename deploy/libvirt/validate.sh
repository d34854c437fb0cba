#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# Validates deploy/libvirt/*.xml against libvirt's domain schema: with virt-xml-validate if
# it is installed, else with xmllint and the schemas of Debian's libvirt0 package, fetched
# (apt-get download, never installed) into ~/.cache/vcuda/libvirt-schemas-VERSION.
#   bash deploy/libvirt/validate.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
xmls=("$here"/*.xml)
if command -v virt-xml-validate >/dev/null && command -v xmllint >/dev/null; then
    for x in "${xmls[@]}"; do virt-xml-validate "$x" domain; done
    exit 0
fi
cache=${VCUDA_CACHE:-$HOME/.cache/vcuda}
if ! command -v apt-get >/dev/null; then
    echo "libvirt/validate.sh: neither virt-xml-validate nor apt-get; not validated" >&2
    exit 0
fi
ver=$(apt-cache policy libvirt0 2>/dev/null | sed -n 's/ *Candidate: //p')
if [ -z "$ver" ] || [ "$ver" = "(none)" ]; then
    echo "libvirt/validate.sh: no libvirt0 package in this system's sources; not validated" >&2
    exit 0
fi
dir=$cache/libvirt-schemas-$ver
if [ ! -f "$dir/ok" ]; then
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    (cd "$work" && apt-get download libvirt0 libxml2-utils >/dev/null 2>&1) || {
        echo "libvirt/validate.sh: cannot download libvirt0/libxml2-utils" >&2
        exit 1
    }
    mkdir -p "$dir"
    for d in "$work"/*.deb; do dpkg-deb -x "$d" "$work/x"; done
    rm -rf "$dir/schemas"
    cp -r "$work/x/usr/share/libvirt/schemas" "$dir/schemas"
    cp "$work/x/usr/bin/xmllint" "$dir/xmllint"
    touch "$dir/ok"
fi
xmllint=$(command -v xmllint || echo "$dir/xmllint")
for x in "${xmls[@]}"; do
    "$xmllint" --noout --relaxng "$dir/schemas/domain.rng" "$x"
done
