#!/usr/bin/env bash
# Prepare an object tree for the kbuild workload: configure it and run
# 'make prepare', so that the timed builds compile and nothing else.
#
#   kbuild-prepare.sh SCALE OBJDIR TREE
#
# SCALE full uses defconfig, vm and small tinyconfig.  Does nothing if
# OBJDIR was already prepared for the same SCALE and TREE.  Needs no root:
# 'make sweep' runs it on the host, natively, before booting the VM.
# Configured in the workloads' fixed environment (common.sh's WL_ENV), the
# one the builds run in: the configuration asks the PATH for rustc, and
# the host's (a rustup's ~/.cargo/bin) gave CONFIG_RUSTC_VERSION=109500
# here where a PATH without it gives 0, so that the prepared tree
# depended on what else the host had installed (the untimed settle build
# synced it back; workloads/NOTES.md, "kbuild on every machine").
#
# Example:  workloads/kbuild-prepare.sh small build/kbuild-small build/src/linux-source-6.12
set -euo pipefail
. "$(dirname "$0")/../scripts/lib.sh"
# shellcheck source=workloads/lib/common.sh
. "$(dirname "$0")/lib/common.sh"
lab_help "$@"

[ $# -eq 3 ] || bad_arg "usage: ${0##*/} full|vm|small OBJDIR TREE"
scale=$1 obj=$2 tree=$3
case $scale in
full) config=defconfig ;;
vm | small) config=tinyconfig ;;
*) die "unknown scale '$scale': full, vm or small" ;;
esac
[ -f "$tree/Makefile" ] || die "no Linux tree at '$tree'"
# Absolute: make -C takes a relative O= from inside the tree.
mkdir -p "$obj"
obj=$(cd "$obj" && pwd)

stamp="$scale $config $(cd "$tree" && pwd) ${WL_ENV_VARS[*]}"
if [ -f "$obj/.config" ] && [ -f "$obj/.lab-prepared" ] && [ "$(cat "$obj/.lab-prepared")" = "$stamp" ]; then
	exit 0
fi
log "preparing $obj ($config, make prepare) from $tree"
find "$obj" -mindepth 1 -delete
"${WL_ENV[@]}" make -s -C "$tree" O="$obj" "$config" >/dev/null
"${WL_ENV[@]}" make -s -C "$tree" O="$obj" -j"$(nproc)" prepare >/dev/null
echo "$stamp" >"$obj/.lab-prepared"
