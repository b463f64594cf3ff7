#!/usr/bin/env bash
# Boot the lab kernel in a VM with the host's files (virtme-ng), the
# repository writable so results come back to the host.
#
#   vm.sh                 an interactive shell in the guest
#   vm.sh -- CMD...       run CMD in the guest (in the repository); its exit
#                         status becomes ours
#
# Environment:
#   VM_ACCEL=auto|kvm|tcg  auto (default) probes KVM once and remembers it
#   VM_TIMEOUT=SECONDS     stop a guest that runs longer (default 3600)
#   VM_CPUS=N VM_MEM=SIZE  guest size (default 2 CPUs, 2G)
#   KERNEL=path            kernel image (default build/obj/arch/x86/boot/bzImage)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

VM_ACCEL=${VM_ACCEL:-auto}
VM_TIMEOUT=${VM_TIMEOUT:-3600}
VM_CPUS=${VM_CPUS:-2}
VM_MEM=${VM_MEM:-2G}
KVM_PROBE_TIMEOUT=${KVM_PROBE_TIMEOUT:-40}
KERNEL=${KERNEL:-$KOBJ/arch/x86/boot/bzImage}
VNG=$LAB_VENV/bin/vng

[ -x "$VNG" ] || die "virtme-ng is not installed in $LAB_VENV; run 'make venv'"
[ -f "$KERNEL" ] || die "no kernel at $KERNEL; run 'make kernel'"
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 is missing; run 'make deps'"
case $VM_TIMEOUT in '' | *[!0-9]*) die "VM_TIMEOUT must be a number of seconds" ;; esac

# The VM gets the repository read-write; everything else of the host is
# visible read-only (virtme-ng's default).
vng_base=(--run "$KERNEL" --cpus "$VM_CPUS" --memory "$VM_MEM" --rwdir "$LAB_ROOT"
	--cwd "$PWD" --disable-microvm)

# A KVM that exists but does not work: on some hosts a KVM guest hangs
# while decompressing the kernel.  Boot once with a short time limit and
# remember the answer for this host, QEMU and kernel image.
kvm_works() {
	[ -r /dev/kvm ] && [ -w /dev/kvm ] || return 1
	local key verdict_file
	key=$(printf '%s\n' "$(uname -r)" "$(qemu-system-x86_64 --version | head -1)" \
		"$(grep -m1 'model name' /proc/cpuinfo)" | md5sum | cut -c1-12)
	verdict_file=$LAB_CACHE/kvm-probe-$key
	if [ -f "$verdict_file" ]; then
		[ "$(cat "$verdict_file")" = works ]
		return
	fi
	mkdir -p "$LAB_CACHE"
	log "probing KVM (a guest that has not answered in ${KVM_PROBE_TIMEOUT} s counts as a hang)"
	if timeout -k 5 "$KVM_PROBE_TIMEOUT" "$VNG" "${vng_base[@]}" --exec true \
		</dev/null >/dev/null 2>&1; then
		echo works >"$verdict_file"
		return 0
	fi
	echo hangs >"$verdict_file"
	return 1
}

case $VM_ACCEL in
kvm) accel=(); log "accelerator: KVM (VM_ACCEL=kvm)" ;;
tcg) accel=(--disable-kvm); log "accelerator: TCG software emulation (VM_ACCEL=tcg)" ;;
auto)
	if kvm_works; then
		accel=()
		log "accelerator: KVM"
	else
		accel=(--disable-kvm)
		if [ -e /dev/kvm ]; then
			log "accelerator: TCG software emulation: /dev/kvm is here but a KVM guest did not boot (set VM_ACCEL=kvm to force it)"
		else
			log "accelerator: TCG software emulation: no /dev/kvm"
		fi
	fi
	;;
*) die "VM_ACCEL must be auto, kvm or tcg, not '$VM_ACCEL'" ;;
esac

if [ "${1:-}" = -- ]; then
	shift
fi
if [ $# -eq 0 ]; then
	exec "$VNG" "${vng_base[@]}" "${accel[@]}"
fi

# Quote the command for the guest's shell, then run it with a time limit.
printf -v guest_cmd '%q ' "$@"
status=0
timeout -k 10 "$VM_TIMEOUT" "$VNG" "${vng_base[@]}" "${accel[@]}" --exec "$guest_cmd" </dev/null ||
	status=$?
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
	die "the guest did not finish within $VM_TIMEOUT s (VM_TIMEOUT) and was stopped"
fi
exit "$status"
