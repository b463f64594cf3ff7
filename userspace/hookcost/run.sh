#!/usr/bin/env bash
# What the syscall hook costs.  Null-syscall latency (getppid) on:
#   a  the nohook variant: the same series, CONFIG_X86_SYSCALL_HOOK=n
#   b  the stock lab kernel, no hook registered
#   c  the delay module loaded, loops=0
#   d  loops=1
# Writes results/hookcost-<date>-<time>/ (raw.csv, meta.json, one meta.json
# per boot in boots/) and prints b/a, c/a and the ns one loop adds through
# 'lab analyse'.  Targets: b/a <= 1.01, c/a <= 1.05.
#
#   BOOTS=3   boots of each kernel, alternating
#   ROUNDS=5  measurements per case and boot
#
# Example:  BOOTS=1 ROUNDS=3 userspace/hookcost/run.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../scripts/lib.sh"
lab_help "$@"

lab_env_uint ROUNDS 5 1  BOOTS 3 1
# Its settings come from the environment: an argument would be a mistake
# that meta.json then records as if it had been used.
[ $# -eq 0 ] || bad_arg "takes no arguments, not '$1': BOOTS and ROUNDS come from the environment"
lab_built "$LAB_TOOL"

log "building the comparison kernel without the hook (VARIANT=nohook)"
VARIANT=nohook KOBJ=$(kobj_of nohook) "$LAB_ROOT/scripts/build-kernel.sh"

lab_begin "$LAB_ROOT/results" hookcost
"$LAB_TOOL" meta "$LAB_DIR" hookcost boots:="$BOOTS" rounds:="$ROUNDS" syscall=getppid \
	calls_per_batch:=1000 batches:=301 cpu:=0 -- "$0" "$@"
echo "case,boot,round,ns_per_call" >"$LAB_DIR/raw.csv"
mkdir "$LAB_DIR/boots"
# The two kernels boot in turn, BOOTS times each, so that the host's slow
# spells fall on both sides instead of on whichever ran second.
for boot in $(seq "$BOOTS"); do
	log "boot $boot/$BOOTS, a: hook compiled out ($ROUNDS rounds)"
	VARIANT=nohook "$LAB_ROOT/scripts/vm.sh" -- "$here/guest.sh" a "$ROUNDS" "$boot" "$LAB_DIR"
	log "boot $boot/$BOOTS, b, c, d: lab kernel ($ROUNDS rounds)"
	VARIANT=stock "$LAB_ROOT/scripts/vm.sh" -- "$here/guest.sh" bcd "$ROUNDS" "$boot" "$LAB_DIR"
done
lab_commit hookcost
lab_analyse 1
