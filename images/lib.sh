#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# Shared helpers for the image and toolchain scripts. Source it; do not run it.
#
# Every long build caches its result under $VCUDA_CACHE (default ~/.cache/vcuda), in a
# directory named by a key that changes whenever an input changes (version + patch hash).

set -euo pipefail

VCUDA_CACHE=${VCUDA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vcuda}
export VCUDA_CACHE
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export REPO_ROOT

log() { printf '[%s] %s\n' "$(basename "$0")" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# sha256 of the given files (or stdin), first 16 hex digits.
short_hash() { cat "$@" | sha256sum | cut -c1-16; }

# The code of a script without its comment and blank lines, for cache keys that survive edits of
# comments.
script_code() { grep -Ev '^[[:space:]]*(#|$)' "$1"; }

# Runs apt-get as root, through sudo when needed.
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# Installs Debian packages (bookworm or bookworm-backports/-security only) when missing.
apt_install() {
    local missing=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "${p%%/*}" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    log "installing ${missing[*]}"
    {
        flock 9
        apt_update_once
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
            -o DPkg::Lock::Timeout=600 -o Dir::Etc::SourceList="$APT_PRIVATE/sources.list" \
            -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists="$APT_PRIVATE/lists" "${missing[@]}" >&2
    } 9>"$(_apt_lock)"
}

# The private apt state is shared by scripts that build-all.sh runs in parallel: the callers of
# apt-get below hold this lock.
_apt_lock() { mkdir -p "$APT_PRIVATE"; echo "$APT_PRIVATE/.lock"; }

# Downloads .deb files (bookworm suites, e.g. `seabios=1.16.3-2~bpo12+1`) into the current
# directory without installing them (unpack with dpkg-deb -x).
apt_download() {
    {
        flock 9
        apt_update_once
        apt-get download -q -o APT::Sandbox::User=root -o Dir::Etc::SourceList="$APT_PRIVATE/sources.list" \
            -o Dir::Etc::SourceParts=/dev/null \
            -o Dir::State::Lists="$APT_PRIVATE/lists" "$@" >&2
    } 9>"$(_apt_lock)"
}

# A private apt configuration that sees bookworm, bookworm-updates, bookworm-security and
# bookworm-backports binaries, and trixie/sid only as sources and arch:all downloads
# (never install trixie or sid binaries: a newer libc breaks the system).
APT_PRIVATE=$VCUDA_CACHE/apt
# Writes stdin to $1 only when the content differs (a changed list forces an apt update).
_write_if_changed() {
    local new; new=$(cat)
    [ -f "$1" ] && [ "$(cat "$1")" = "$new" ] && return 0
    printf '%s\n' "$new" >"$1"
}
apt_private_setup() {
    mkdir -p "$APT_PRIVATE/lists/partial" "$APT_PRIVATE/archives/partial"
    _write_if_changed "$APT_PRIVATE/sources.list" <<EOS
deb http://deb.debian.org/debian bookworm main non-free non-free-firmware
deb http://deb.debian.org/debian bookworm-updates main
deb http://deb.debian.org/debian bookworm-backports main
deb http://deb.debian.org/debian-security bookworm-security main
EOS
    _write_if_changed "$APT_PRIVATE/sources-new.list" <<EOS
deb http://deb.debian.org/debian sid main
deb-src http://deb.debian.org/debian bookworm-backports main
deb-src http://deb.debian.org/debian trixie main
deb-src http://deb.debian.org/debian trixie-updates main
deb-src http://deb.debian.org/debian-security trixie-security main
EOS
}
APT_UPDATED=
apt_update_once() {
    [ -n "$APT_UPDATED" ] && return 0
    apt_private_setup
    # Refresh at most once an hour.
    if [ -z "$(find "$APT_PRIVATE/lists" -maxdepth 1 -name .updated -mmin -60 \
        -newer "$APT_PRIVATE/sources.list" 2>/dev/null)" ]; then
        as_root apt-get update -q -o Dir::Etc::SourceList="$APT_PRIVATE/sources.list" \
            -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists="$APT_PRIVATE/lists" >&2
        touch "$APT_PRIVATE/lists/.updated"
    fi
    APT_UPDATED=1
}

# apt-get for the newer suites, in its own state dir, for `download` and `source` only.
apt_new() {
    apt_private_setup
    mkdir -p "$APT_PRIVATE/lists-new/partial"
    local o=(-o Dir::Etc::SourceList="$APT_PRIVATE/sources-new.list" -o Dir::Etc::SourceParts=/dev/null
        -o Dir::State::Lists="$APT_PRIVATE/lists-new" -o Dir::Cache="$APT_PRIVATE/cache-new"
        -o APT::Architecture=amd64 -o APT::Sandbox::User=root)
    mkdir -p "$APT_PRIVATE/cache-new/archives/partial"
    {
        flock 9
        if [ -z "$(find "$APT_PRIVATE/lists-new" -maxdepth 1 -name .updated -mmin -60 \
            -newer "$APT_PRIVATE/sources-new.list" 2>/dev/null)" ]; then
            apt-get -q "${o[@]}" update >&2
            touch "$APT_PRIVATE/lists-new/.updated"
        fi
        apt-get -q "${o[@]}" "$@"
    } 9>"$(_apt_lock)"
}

# Fails loudly unless file $1 has the sha256 $2.
check_sha256() {
    local got; got=$(sha256sum "$1" | cut -d' ' -f1)
    [ "$got" = "$2" ] || die "sha256 mismatch for $1: expected $2, got $got (the pinned file changed upstream, or
    the download was cut short: delete the file to retry)"
}

# Prints NAME=VALUE on stdout so that `eval` reads it back (single-quoted when needed).
emit_var() {
    if [[ $2 =~ ^[A-Za-z0-9_./:=+,@%-]*$ ]]; then
        printf '%s=%s\n' "$1" "$2"
    else
        printf "%s='%s'\n" "$1" "${2//\'/\'\\\'\'}"
    fi
}

# Serialises the builders of one kind of cache entry across processes (CI builds the images
# in the background while the VM tests build what they need, into the same "$dir.tmp"): an
# exclusive lock on $VCUDA_CACHE/.$1.lock, held until the calling script exits. Take it
# before checking whether the entry exists, so a waiter finds the other's result.
cache_lock() {
    mkdir -p "$VCUDA_CACHE"
    local fd
    exec {fd}>"$VCUDA_CACHE/.$1.lock"
    flock "$fd"
}

# Atomically publishes a finished build directory: build into "$1.tmp", then call this.
publish_dir() { rm -rf "$1"; mv "$1.tmp" "$1"; }
