#!/usr/bin/env bash
# What the syscall hook costs.  Null-syscall latency (getppid) on:
#   a  the same tree built with CONFIG_X86_SYSCALL_HOOK=n
#   b  the lab kernel, no hook registered
#   c  the delay module loaded, loops=0
#   d  loops=1
# Prints b/a, c/a and the ns one loop adds; writes results/bench-hook.json.
# Targets: b/a <= 1.01, c/a <= 1.05.  BOOTS (3) boots of each kernel, ROUNDS
# (5) measurements per case and boot.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

ROUNDS=${ROUNDS:-5}
BOOTS=${BOOTS:-3}
out=$LAB_ROOT/results
mkdir -p "$out" "$LAB_BUILD"

# (a) needs a second kernel: the same fragment with the hook turned off.
nohook_cfg=$LAB_BUILD/nohook.config
{
	grep -v '^CONFIG_X86_SYSCALL_HOOK=' "$LAB_ROOT/config/lab.config"
	echo '# CONFIG_X86_SYSCALL_HOOK is not set'
} >"$nohook_cfg.new"
# Replace it only when it changed, so the comparison kernel is not reconfigured.
if cmp -s "$nohook_cfg.new" "$nohook_cfg" 2>/dev/null; then
	rm "$nohook_cfg.new"
else
	mv "$nohook_cfg.new" "$nohook_cfg"
fi
log "building the comparison kernel without the hook"
FRAGMENT=$nohook_cfg KOBJ=$LAB_BUILD/obj-nohook "$LAB_ROOT/scripts/build-kernel.sh"

raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
# The two kernels boot in turn, BOOTS times each, so that the host's slow
# spells fall on both sides instead of on whichever ran second.
for boot in $(seq "$BOOTS"); do
	log "boot $boot/$BOOTS, a: hook compiled out ($ROUNDS rounds)"
	KERNEL=$LAB_BUILD/obj-nohook/arch/x86/boot/bzImage \
		"$LAB_ROOT/scripts/vm.sh" -- "$LAB_ROOT/scripts/guest-bench-hook.sh" a "$ROUNDS" >>"$raw"
	log "boot $boot/$BOOTS, b, c, d: lab kernel ($ROUNDS rounds)"
	"$LAB_ROOT/scripts/vm.sh" -- "$LAB_ROOT/scripts/guest-bench-hook.sh" bcd "$ROUNDS" >>"$raw"
done

"$LAB_VENV/bin/python" "$LAB_ROOT/userspace/analysis/bench_hook.py" "$raw" "$out/bench-hook.json"
