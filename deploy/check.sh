#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# Checks the deployment files: stages deploy/install.sh into a temporary root (both executor
# variants) and runs `systemd-analyze verify` on the units there; validates the libvirt
# domain XML against libvirt's schema where virt-xml-validate is installed.
#   bash deploy/check.sh [--bin-dir target/debug]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
bin_dir=$repo/target/debug
[ "${1:-}" = --bin-dir ] && bin_dir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! command -v systemd-analyze >/dev/null; then
    echo "deploy/check.sh: systemd-analyze not installed; units not verified" >&2
else
    for executor in cuda cpu; do
        r=$tmp/root-$executor
        bash "$here/install.sh" --root "$r" --bin-dir "$bin_dir" --executor "$executor" >/dev/null
        # verify resolves User= and the ExecStart binaries inside the root.
        mkdir -p "$r/etc" "$r/bin"
        cp /etc/passwd /etc/group "$r/etc/"
        grep -q '^vcuda:' "$r/etc/group" || echo 'vcuda:x:990:' >>"$r/etc/group"
        grep -q '^vcuda:' "$r/etc/passwd" || echo 'vcuda:x:990:990::/var/lib/vcuda:/usr/sbin/nologin' >>"$r/etc/passwd"
        cp /bin/sh /bin/rm "$r/bin/"
        # The system's own units (sysinit.target and the rest the units depend on).
        mkdir -p "$r/usr/lib/systemd"
        cp -r /usr/lib/systemd/system "$r/usr/lib/systemd/"
        out=$(cd "$r/etc/systemd/system" && SYSTEMD_LOG_LEVEL=notice systemd-analyze verify \
            --man=no --root="$r" vcuda-backend.socket vcuda-backend.service \
            vcuda-vhost@test.service 2>&1) || { echo "$out"; echo "systemd-analyze verify failed ($executor)"; exit 1; }
        # verify exits 0 on some problems it only prints.
        if [ -n "$out" ]; then
            echo "$out"
            echo "systemd-analyze verify complained ($executor)"
            exit 1
        fi
        echo "systemd units ($executor executor): systemd-analyze verify clean"
    done
fi
bash "$here/libvirt/validate.sh"
# The Kubernetes manifests parse, and each object names its kind, API version and name; the
# pod asks for the plugin's resource and the DaemonSet runs the plugin with the paths the
# systemd units use.
python3 - "$here/k8s" <<'PY'
import pathlib, sys
try:
    import yaml
except ImportError:
    print("deploy/check.sh: python3-yaml missing; Kubernetes manifests not checked", file=sys.stderr)
    sys.exit(0)
objs = {}
for f in sorted(pathlib.Path(sys.argv[1]).glob("*.yaml")):
    for o in yaml.safe_load_all(f.read_text()):
        assert o.get("apiVersion") and o.get("kind") and o["metadata"].get("name"), f
        objs[o["kind"]] = o
pod = objs["Pod"]["spec"]["containers"][0]
assert pod["resources"]["limits"]["vcuda.io/gpu"] == 1
args = objs["DaemonSet"]["spec"]["template"]["spec"]["containers"][0]["args"]
assert "--backend-socket=/run/vcuda/vcuda.sock" in args and "--lib-dir=/usr/local/lib/vcuda" in args
print("Kubernetes manifests: %d objects parse" % len(objs))
PY
