#!/usr/bin/env bash
# Stock versus PREEMPT_RT: builds the kernel variants that are not built
# yet (same source, same series, shared ccache), boots each in turn, runs
# the same suite on each (guest.sh: cyclictest idle and loaded, perf stat
# of sortsum, the square wave, the lab's own experiments) into one
# results/rt-compare-<date>-<time>/ folder, then compares them
# ('lab analyse': report.txt, comparison.csv/json, the plots).
#
#   run.sh [options] [-- GUEST_OPTIONS]
#   --variants LIST   the kernels, in boot order (default stock,rt); a
#                     kernel may carry boot options after a colon, which
#                     go on its command line: stock:preempt=full is the
#                     stock kernel run fully preemptible (PREEMPT_DYNAMIC)
#   --here            no VM: run the suite on the kernel this machine runs
#                     (a real machine booted into a lab kernel, 'make deb');
#                     with --into DIR, add it to an earlier run's folder
#   --into DIR        an rt-compare folder to add this kernel to (with --here)
#   --no-analysis     record only; analyse later with lab analyse DIR
#   GUEST_OPTIONS     go to guest.sh: --long, --quick, --only LIST, -r N ...
#
# Environment: VM_CLOCK (default auto: virtual under TCG, the host's under
# KVM), VM_VIRTUAL_CPUS (default 1: the CPUs on the virtual clock unless
# VM_CPUS is given; README, "Stock against PREEMPT_RT on the virtual
# clock", says why), VM_CPUS (scripts/vm.sh).
#
# Example:  userspace/rtcompare/run.sh -- --only cyclictest,perfstat   (make rt-compare)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../scripts/lib.sh"
lab_help "$@"
export VM_CLOCK=${VM_CLOCK:-auto} VM_VIRTUAL_CPUS=${VM_VIRTUAL_CPUS:-1}

variants=stock,rt vm=true analysis=1 into=
guest_args=()
args=("$@")
while [ $# -gt 0 ]; do
	case $1 in
	--variants) want_value "$@"; variants=$2; shift ;;
	--here) vm=false ;;
	--into) want_value "$@"; into=$2; shift ;;
	--no-analysis) analysis=0 ;;
	--) shift; guest_args=("$@"); break ;;
	*) bad_arg "unknown argument '$1' (see --help)" ;;
	esac
	shift
done
IFS=, read -r -a vlist <<<"$variants"
[ ${#vlist[@]} -ge 1 ] || bad_arg "--variants wants a list like stock,rt"
for spec in "${vlist[@]}"; do
	v=${spec%%:*}
	check_variant "$v" --variants
	[ "$v" != nohook ] || bad_arg "--variants wants kernels with the hook, not 'nohook'"
	[[ $spec != *:* || ${spec#*:} =~ ^[a-z0-9_.=-]+$ ]] ||
		bad_arg "--variants: boot options like preempt=full after the colon, not '${spec#*:}'"
done
[ -z "$into" ] || [ "$vm" = false ] || bad_arg "--into goes with --here"
[ -z "$into" ] || [ -d "$into" ] || bad_arg "--into wants an rt-compare folder, not '$into'"
# guest.sh's options are checked before any kernel is built or booted.
"$here/guest.sh" - --check "${guest_args[@]}"
lab_built "$LAB_TOOL" "$here/sortsum" "$here/squarewave"
if [ "$vm" = false ]; then
	[ "$(id -u)" -eq 0 ] || die "--here needs root (real-time priorities, modules, tracing)"
	command -v cyclictest >/dev/null || die "cyclictest is missing (Debian: rt-tests)"
	command -v perf >/dev/null || die "perf is missing (Debian: linux-perf)"
fi

if [ -n "$into" ]; then
	LAB_DIR=$into
else
	lab_begin "$LAB_ROOT/results" rt-compare
	"$LAB_TOOL" meta "$LAB_DIR" rt-compare variants="$variants" \
		vm:="$vm" -- "$0" "${args[@]}"
fi
start=$(date +%s)
if [ "$vm" = true ]; then
	for spec in "${vlist[@]}"; do
		v=${spec%%:*}
		kobj=$(kobj_of "$v")
		if [ ! -f "$kobj/arch/x86/boot/bzImage" ] ||
			[ ! -f "$LAB_BUILD/modules/$(cat "$kobj/include/config/kernel.release" 2>/dev/null)/delay.ko" ]; then
			log "the $v kernel is not built: building it (make kernel module VARIANT=$v)"
			make -C "$LAB_ROOT" --no-print-directory kernel module VARIANT="$v"
		fi
	done
	for spec in "${vlist[@]}"; do
		v=${spec%%:*} boot=
		[[ $spec != *:* ]] || boot=${spec#*:}
		VARIANT=$v VM_APPEND="${VM_APPEND:-}${boot:+ $boot}" \
			lab_guest true "$here/guest.sh" "$LAB_DIR" "${guest_args[@]}"
	done
else
	lab_guest false "$here/guest.sh" "$LAB_DIR" "${guest_args[@]}"
fi
[ -n "$into" ] || lab_commit rt-compare
log "measured in $(($(date +%s) - start)) s: $LAB_DIR"
lab_analyse "$analysis"
