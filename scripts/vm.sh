#!/usr/bin/env bash
# Boot the lab kernel in a VM with the host's files (virtme-ng), the
# repository writable so results come back to the host.
#
#   vm.sh                 an interactive shell in the guest
#   vm.sh -- CMD...       run CMD in the guest (in the repository); its exit
#                         status becomes ours
#   vm.sh --clock         print the clock a guest would run on (host or
#                         virtual: VM_CLOCK, auto resolved) and stop
#
# Environment:
#   VM_ACCEL=auto|kvm|tcg  auto (default) probes KVM once and remembers it
#   VM_TCG_THREAD=multi|single  TCG with a host thread per vCPU (default
#                          with QEMU >= 8) or one for all; see below
#   VM_CLOCK=host|virtual|auto  the guest's clock under TCG: the host's
#                          (default), or QEMU's instruction counter (-icount
#                          shift=0: one guest instruction is one ns of guest
#                          time, whatever the host does; single-threaded TCG,
#                          the guest idles with HLT).  Not with KVM.  auto
#                          (the main job's: make, make sweep): virtual where
#                          the guest runs under TCG, the host's under KVM.
#   VM_TIMEOUT=SECONDS     stop a guest that runs longer (default 3600)
#   VM_HANG=SECONDS        stop a guest whose vCPUs have not run for that
#                          long (default 600; 0: never), and boot it once
#                          more if its command had not started
#   VM_CPUS=N VM_MEM=SIZE  guest size (default 2 CPUs, 2G)
#   VM_VIRTUAL_CPUS=N      the CPUs when VM_CPUS is not given and the clock
#                          is the virtual one (make sweep: 1)
#   VM_APPEND='...'        more kernel command-line options
#   VM_KLOG=FILE           with a command: stream the guest's kernel log
#                          into FILE on the host (dmesg -w from boot until
#                          the command ends, line by line, so what a guest
#                          said before it hung or was stopped is there);
#                          its folder is shared with the guest read-write;
#                          an oops or panic also goes to FILE.console
#   VM_UDEV=keep|stop      stop the guest's udevd before the command (make
#                          test-debug): the lab's device nodes come from
#                          devtmpfs, and on the debug kernel udevd's work on
#                          each module load's uevents competes with the tests
#   VARIANT=stock|nohook|rt  which lab kernel (default stock: build/obj)
#   KERNEL=path            kernel image (default: the variant's bzImage)
#
# The guest's kernel command line carries what only the host knows, for
# the meta.json of every result: lab.variant, lab.accel, lab.accel_why,
# lab.qemu, lab.commit (spaces written as '_'), lab.clock and
# lab.icount_shift.
#
# Example:  VARIANT=rt scripts/vm.sh -- uname -v
set -euo pipefail
. "$(dirname "$0")/lib.sh"
lab_help "$@"

VM_ACCEL=${VM_ACCEL:-auto}
VM_CLOCK=${VM_CLOCK:-host}
case $VM_CLOCK in
host | virtual | auto) ;;
*) bad_arg "VM_CLOCK must be host, virtual or auto, not '$VM_CLOCK'" ;;
esac
# QEMU's icount: 2^shift ns of guest time per instruction.
ICOUNT_SHIFT=0
VM_TIMEOUT=${VM_TIMEOUT:-3600}
VM_HANG=${VM_HANG:-600}
VM_UDEV=${VM_UDEV:-keep}
case $VM_UDEV in
keep | stop) ;;
*) bad_arg "VM_UDEV must be keep or stop, not '$VM_UDEV'" ;;
esac
VM_CPUS_GIVEN=${VM_CPUS:-}
VM_CPUS=${VM_CPUS:-2}
VM_MEM=${VM_MEM:-2G}
KVM_PROBE_TIMEOUT=${KVM_PROBE_TIMEOUT:-40}
KERNEL=${KERNEL:-$KOBJ/arch/x86/boot/bzImage}
VNG=$LAB_VENV/bin/vng
# vng runs its helpers (virtme-run, ...) from PATH.
export PATH=$LAB_VENV/bin:$PATH

[ -x "$VNG" ] || die "virtme-ng is not installed in $LAB_VENV; run 'make venv'"
check_variant "$VARIANT"
[ -f "$KERNEL" ] || die "no kernel at $KERNEL; run 'make kernel VARIANT=$VARIANT'"
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 is missing; run 'make deps'"
case $VM_TIMEOUT in '' | *[!0-9]*) die "VM_TIMEOUT must be a number of seconds" ;; esac
case $VM_HANG in '' | *[!0-9]*) die "VM_HANG must be a number of seconds" ;; esac

# The VM gets the repository read-write; everything else of the host is
# visible read-only (virtme-ng's default).
# The root is a 9p share tagged /dev/root; naming it on the command line lets
# the kernel mount it without the block layer (config/lab.config has none).
vng_base=(--run "$KERNEL" --memory "$VM_MEM" --rwdir "$LAB_ROOT"
	--cwd "$PWD" --disable-microvm --force-9p --append root=/dev/root)
# The root with 9p's loose cache (the last rootflags= is the one the
# kernel takes): the guest keeps what it has read of the host's files, the
# root is read-only to it, and the host does not change what the lab reads
# there while a guest runs.  Without it every stat, open and read went to
# QEMU: 3,500 file calls to import pytest took 30-57 s in a guest beside
# another VM, and each test and tool of a guest pass that starts Python
# paid again.
vng_base+=(--append "rootflags=version=9p2000.L,trans=virtio,access=any,msize=524288,cache=loose")
[ -z "${VM_APPEND:-}" ] || vng_base+=(--append "$VM_APPEND")
# build/ may be a link to another disk; the guest writes there too (the
# kbuild workload's object tree), so it gets that folder read-write as well.
build_real=$(readlink -f "$LAB_BUILD" 2>/dev/null || true)
case $build_real in
"" | "$LAB_ROOT" | "$LAB_ROOT"/*) ;;
*) vng_base+=(--rwdir "$build_real") ;;
esac

# A KVM that exists but does not work: on some hosts a KVM guest hangs
# while decompressing the kernel, on others QEMU dies setting up the vCPU.
# Boot once with a short time limit and remember the verdict for this host,
# QEMU and CPU in the cache.  kvm_verdict is "works" or why not.
kvm_verdict=
kvm_works() {
	if [ ! -r /dev/kvm ] || [ ! -w /dev/kvm ]; then
		kvm_verdict="no usable /dev/kvm"
		return 1
	fi
	local key verdict_file status=0
	key=$(printf '%s\n' "$(uname -r)" "$(qemu-system-x86_64 --version | head -1)" \
		"$(grep -m1 'model name' /proc/cpuinfo)" | md5sum | cut -c1-12)
	verdict_file=$LAB_CACHE/kvm-probe-$key
	if [ ! -f "$verdict_file" ]; then
		mkdir -p "$LAB_CACHE"
		log "probing KVM: booting the kernel once, ${KVM_PROBE_TIMEOUT} s at most"
		timeout -k 5 "$KVM_PROBE_TIMEOUT" "$VNG" "${vng_base[@]}" --exec true \
			</dev/null >/dev/null 2>&1 || status=$?
		case $status in
		0) echo works ;;
		124 | 137) echo "a KVM guest hung (no answer in ${KVM_PROBE_TIMEOUT} s)" ;;
		*) echo "a KVM guest failed to start (exit status $status)" ;;
		esac >"$verdict_file"
	fi
	kvm_verdict=$(cat "$verdict_file")
	[ "$kvm_verdict" = works ]
}

# Multi-threaded TCG in QEMU 7.2 (Debian 12's own) does not keep the vCPUs
# coherent when the kernel patches its text while another vCPU runs it:
# flipping any static key, tracepoint or ftrace site under load ends in
# "Oops: int3".  The delay module and tracing both patch text.  QEMU 10
# (scripts/deps.sh installs it) does not show the fault, so multi-threaded
# TCG is the default there and one host thread for all vCPUs the default
# with an older QEMU, whose timings then include the other vCPUs' turns.
found=$(qemu_major)
if [ -z "${VM_TCG_THREAD:-}" ]; then
	if [ "${found:-0}" -ge "$QEMU_TRUSTED_MAJOR" ]; then
		VM_TCG_THREAD=multi
	else
		VM_TCG_THREAD=single
		log "QEMU ${found:-?} is older than $QEMU_TRUSTED_MAJOR: single-threaded TCG (run 'make deps' for QEMU 10)"
	fi
fi
case $VM_TCG_THREAD in
single | multi) ;;
*) die "VM_TCG_THREAD must be single or multi, not '$VM_TCG_THREAD'" ;;
esac
if [ "$VM_CLOCK" = auto ]; then
	case $VM_ACCEL in
	kvm) VM_CLOCK=host ;;
	tcg) VM_CLOCK=virtual ;;
	*) if kvm_works; then VM_CLOCK=host; else VM_CLOCK=virtual; fi ;;
	esac
fi
if [ "${1:-}" = --clock ]; then
	echo "$VM_CLOCK"
	exit 0
fi
# The virtual clock: guest time advances with the instructions the guest
# executes (sleep=off: an idle guest skips ahead to its next timer instead
# of waiting for the host's time; align=off: never slowed to the host's
# pace).  icount runs every vCPU on one host thread, taking turns.  The
# RTC follows the same clock.
if [ "$VM_CLOCK" = virtual ]; then
	if [ "$VM_ACCEL" = kvm ]; then
		bad_arg "VM_CLOCK=virtual needs TCG: KVM runs the guest on the host's clock (VM_ACCEL=tcg)"
	fi
	VM_TCG_THREAD=single
	tcg=(--disable-kvm --qemu-opts="-accel tcg,thread=single -icount shift=$ICOUNT_SHIFT,sleep=off,align=off -rtc clock=vm")
else
	tcg=(--disable-kvm --qemu-opts="-accel tcg,thread=$VM_TCG_THREAD")
fi

case $VM_ACCEL in
kvm) accel=(); log "accelerator: KVM (VM_ACCEL=kvm)" ;;
tcg) accel=("${tcg[@]}"); log "accelerator: TCG software emulation, thread=$VM_TCG_THREAD (VM_ACCEL=tcg)" ;;
auto)
	if [ "$VM_CLOCK" = virtual ]; then
		accel=("${tcg[@]}")
		log "accelerator: TCG with the virtual clock (icount shift=$ICOUNT_SHIFT, VM_CLOCK=virtual)"
	elif kvm_works; then
		accel=()
		log "accelerator: KVM"
	else
		accel=("${tcg[@]}")
		log "accelerator: TCG software emulation, thread=$VM_TCG_THREAD, because $kvm_verdict (VM_ACCEL=kvm forces KVM)"
	fi
	;;
*) die "VM_ACCEL must be auto, kvm or tcg, not '$VM_ACCEL'" ;;
esac

# What the guest's meta.json should say about where it ran.
qemu_version=$(qemu-system-x86_64 --version | sed -n '1s/.*version \([^ ]*\).*/\1/p')
if [ ${#accel[@]} -eq 0 ]; then
	accel_name=kvm accel_why=${kvm_verdict:-VM_ACCEL=kvm}
else
	accel_name=tcg accel_why=${kvm_verdict:-VM_ACCEL=tcg}
	accel_why="$accel_why; TCG thread=$VM_TCG_THREAD"
	[ "$VM_CLOCK" = host ] || accel_why="$accel_why; virtual clock, icount shift=$ICOUNT_SHIFT"
fi
commit=$(git -C "$LAB_ROOT" rev-parse HEAD 2>/dev/null || echo unknown)
git -C "$LAB_ROOT" diff --quiet HEAD 2>/dev/null || commit=$commit-dirty
cmdline_word() { local v=${1// /_}; printf '%s' "${v//[^A-Za-z0-9_.,;:=+()\/-]/_}"; }
lab_args=(lab.variant="$VARIANT" lab.accel="$accel_name"
	lab.accel_why="$(cmdline_word "$accel_why")" lab.qemu="$(cmdline_word "$qemu_version")"
	lab.commit="$commit")
# Under TCG the guest's TSC follows the host's, but a vCPU thread that
# loses its host CPU between the clocksource watchdog's two reads makes
# the TSC look skewed: the kernel then marks it unstable and falls back to
# the emulated HPET, whose reads cost ~0.5 us and change every figure.
# The TSC here is the host's invariant one: tell the kernel to trust it.
if [ "$accel_name" = tcg ]; then
	lab_args+=(tsc=reliable)
fi
# On the host's clock a vCPU thread that a loaded host starves looks stuck
# to the soft-lockup detector: beside five other jobs on two cores a debug
# guest reported "soft lockup - CPU#0 stuck for 22s" three times in an
# hour, in code no test had entered.  The longest threshold
# (60: a lockup is reported after 120 s) keeps it for real hangs.  The
# virtual clock does not pass while the guest is starved.
if [ "$accel_name" = tcg ] && [ "$VM_CLOCK" = host ]; then
	lab_args+=(watchdog_thresh=60)
fi
# An idle vCPU in MWAIT keeps executing under icount and so keeps the
# virtual clock busy: idle with HLT, which QEMU skips over.
if [ "$VM_CLOCK" = virtual ]; then
	lab_args+=(lab.clock=virtual lab.icount_shift="$ICOUNT_SHIFT" idle=halt)
else
	lab_args+=(lab.clock=host)
fi
vng_base+=(--append "${lab_args[*]}")
if [ -z "$VM_CPUS_GIVEN" ] && [ "$VM_CLOCK" = virtual ] && [ -n "${VM_VIRTUAL_CPUS:-}" ]; then
	VM_CPUS=$VM_VIRTUAL_CPUS
fi
vng_base+=(--cpus "$VM_CPUS")
# Said here, where the count is final (the runners' line said 2 where the
# virtual clock then booted 1).
log "guest: vCPUs $VM_CPUS, memory $VM_MEM"

if [ "${1:-}" = -- ]; then
	shift
fi
if [ $# -eq 0 ]; then
	exec "$VNG" "${vng_base[@]}" "${accel[@]}"
fi

# Quote the command for the guest's shell (dash, as like as not), then run
# it with a time limit.  Its output goes through pipes: QEMU reopens its
# stdout and stderr by path, which would truncate a log file that our
# caller redirected us into.
command=("$@")
guest_cmd=$(sh_quote "$@")
# A /tmp of the guest's own.  virtme-ng's is an overlay on the host's /tmp,
# which the host goes on changing beneath it: a guest test's pytest took
# its numbered folder there beside the host's own pytest runs, and its
# mkdirs failed ten times over (13 tests of a make test).
guest_cmd="mount -t tmpfs -o mode=1777 lab-tmp /tmp && $guest_cmd"
# The virtualenv through the cached root as well: under the repository it
# is on virtme-ng's read-write share, which has no cache (import pytest:
# 19 s the first time, 7-9 s after, where it took 30-57 s each time).
# The root's own view of it, read-only, is bound over it: a guest never
# installs into the venv.  mount --bind / without -R leaves the shares out.
venv_real=$(readlink -f "$LAB_VENV")
case $venv_real in
"$LAB_ROOT"/* | "${build_real:-$LAB_ROOT}"/*)
	guest_cmd="mkdir -p /run/lab-root && mount --bind / /run/lab-root && mount --bind $(sh_quote "/run/lab-root$venv_real") $(sh_quote "$venv_real") || echo 'vm.sh: the venv is read without a cache' >&2; $guest_cmd"
	;;
esac
# A debug guest's udevd was still at its boot's coldplug 300 s later (virtme-
# ng's settle gave up), and every module load and device adds events.
if [ "$VM_UDEV" = stop ]; then
	guest_cmd="pkill -x systemd-udevd; timeout 60 sh -c 'while pgrep -x systemd-udevd >/dev/null; do sleep 0.2; done'; $guest_cmd"
fi
klog_console=
if [ -n "${VM_KLOG:-}" ]; then
	mkdir -p "$(dirname "$VM_KLOG")"
	VM_KLOG=$(cd "$(dirname "$VM_KLOG")" && pwd)/${VM_KLOG##*/}
	: >"$VM_KLOG"
	case ${VM_KLOG%/*} in
	"$LAB_ROOT" | "$LAB_ROOT"/*) ;;
	*) vng_base+=(--rwdir "${VM_KLOG%/*}") ;;
	esac
	# dmesg's stdout to a file is block-buffered: one line at a time.
	guest_cmd="stdbuf -oL dmesg -w >$(sh_quote "$VM_KLOG") 2>&1 & $guest_cmd"
	log "the guest's kernel log goes to $VM_KLOG"
	# A kernel that oopses or panics stops before dmesg -w can write it
	# out: it also writes to a virtio console (hvc0; the serial driver
	# serves one console only, virtme-ng's ttyS0), a file beside VM_KLOG.
	# Only an oops or panic reaches it (virtme-ng boots with loglevel=1,
	# which an oops lifts); console=ttyS0 last keeps virtme-ng's console
	# the guest's /dev/console.  A stock guest of make test's died without
	# a word, its kernel log ending mid-test.  QEMU's options
	# reach it through a shell, so a path it would split gets no console.
	klog_console=$VM_KLOG.console
	case $klog_console in
	*[!A-Za-z0-9_.,/+=-]*)
		log "no console file: QEMU's options could not carry the path $klog_console"
		klog_console=
		;;
	*)
		: >"$klog_console"
		vng_base+=(--qemu-opts="-device virtio-serial-pci,id=lab-klog -device virtconsole,bus=lab-klog.0,chardev=lab-klog -chardev file,id=lab-klog,path=$klog_console" --append "console=hvc0 console=ttyS0")
		;;
	esac
fi
# The command's exit status, also in a file on the share.  virtme-ng brings
# it back over a virtio port that its init finds through udev's links; on
# the debug kernel udev had not made them when init gave up waiting, the
# command ran on the console, and vng said 255 for a pass that ended.
# The file says how the command ended all the same.
status_dir=${build_real:-$LAB_ROOT}
mkdir -p "$status_dir"
status_file=$(mktemp "$status_dir/.vm-status.XXXXXX")
cmd_file=$(mktemp "$status_dir/.vm-cmd.XXXXXX")
# An empty console file (no oops, no panic) is not kept.
trap 'rm -f "$status_file" "$cmd_file"; [ -z "$klog_console" ] || [ -s "$klog_console" ] || rm -f "$klog_console"' EXIT
# sync: on the console fallback the guest powers off as soon as the
# command ends, and a debug pass's 0 (172 tests, none failed) never
# reached the host's copy of the file.
guest_cmd="echo started >$(sh_quote "$status_file"); $guest_cmd; lab_status=\$?; echo \$lab_status >$(sh_quote "$status_file"); sync; exit \$lab_status"
# The command reaches the guest as a script on the share: virtme-ng passes
# --exec on the kernel command line, which x86 cuts at 2048 bytes.  A
# debug pass's command made it 2287 bytes long: the end of the line was
# lost, and the guest waited for its root file system for good, or found
# no init and panicked.
printf '%s\n' "$guest_cmd" >"$cmd_file"
# timeout runs the VM in a process group of its own (so that it can stop
# all of it), which a terminal's Ctrl-C does not reach: the pipeline runs
# in the background, and INT or TERM is passed on to that group (timeout
# is this shell's child that leads a group); then the VM is waited for.
# shellcheck disable=SC2317  # called by the traps
stop_vm() {
	local stat line pid rest ppid pgrp
	[ "$signalled" -ne 0 ] || log "$2: stopping the guest"
	signalled=$1
	for stat in /proc/[0-9]*/stat; do
		read -r line 2>/dev/null <"$stat" || continue
		pid=${line%% *}
		rest=${line##*) }
		read -r _ ppid pgrp _ <<<"$rest"
		if [ "$ppid" = "$$" ] && [ "$pgrp" = "$pid" ]; then
			kill -s TERM -- "-$pid" 2>/dev/null || true
		fi
	done
}
# The CPU time (clock ticks) the guest's vCPUs have had: every thread but
# the main one of the QEMU that this script started.  Empty until it runs.
# A guest once stopped for good early in its boot, both vCPUs waiting in
# QEMU for an event that never came, its main loop idle (the debug
# kernel): no timer tick ran in it for half an hour.  Any live
# guest runs its ticks.
vcpu_ticks() {
	local stat line pid rest ppid comm ticks=0 task f
	local -A parent=()
	for stat in /proc/[0-9]*/stat; do
		read -r line 2>/dev/null <"$stat" || continue
		pid=${line%% *} rest=${line##*) }
		read -r _ ppid _ <<<"$rest"
		parent[$pid]=$ppid
	done
	for pid in "${!parent[@]}"; do
		comm=$(cat "/proc/$pid/comm" 2>/dev/null) || continue
		[[ $comm == qemu-system* ]] || continue
		ppid=$pid
		while [ -n "${parent[$ppid]:-}" ] && [ "$ppid" != "$$" ] && [ "$ppid" -gt 1 ]; do
			ppid=${parent[$ppid]}
		done
		[ "$ppid" = "$$" ] || continue
		for task in /proc/"$pid"/task/*; do
			[ "${task##*/}" != "$pid" ] || continue
			read -r line 2>/dev/null <"$task/stat" || continue
			rest=${line##*) }
			read -r -a f <<<"$rest"
			ticks=$((ticks + f[11] + f[12]))
		done
		printf '%s\n' "$ticks"
		return
	done
}
signalled=0 hung=0
trap 'stop_vm 130 interrupted' INT
trap 'stop_vm 143 terminated' TERM
timeout -k 10 "$VM_TIMEOUT" "$VNG" "${vng_base[@]}" "${accel[@]}" --exec "sh $(sh_quote "$cmd_file")" \
	</dev/null 2> >(cat >&2) | cat &
vm_pid=$!
# Wait for the VM, looking every 5 s whether its vCPUs still run; a wait
# returns early, above 128, when a trap ran, and then the group is
# signalled again each time round (the signal may have come before timeout
# made its group).
last_ticks='' last_run=$SECONDS status=''
while [ -z "$status" ]; do
	[ "$signalled" -eq 0 ] || stop_vm "$signalled" again
	sleep 5 &
	nap=$!
	# The first of the VM and the nap to end; the VM's status is the
	# pipeline's, timeout's (pipefail).
	ended='' code=0
	wait -n -p ended "$vm_pid" "$nap" || code=$?
	kill "$nap" 2>/dev/null || true
	if [ "${ended:-}" = "$vm_pid" ]; then
		status=$code
		break
	fi
	if [ "$VM_HANG" -eq 0 ] || [ "$signalled" -ne 0 ]; then
		continue
	fi
	ticks=$(vcpu_ticks)
	if [ -z "$ticks" ] || [ "$ticks" != "$last_ticks" ]; then
		last_ticks=$ticks last_run=$SECONDS
	elif [ $((SECONDS - last_run)) -ge "$VM_HANG" ]; then
		hung=1
		stop_vm 3 "the guest's vCPUs have not run for $VM_HANG s (VM_HANG): it hung"
	fi
done
trap - INT TERM
# A guest whose command had not started when it hung or ended failed in
# its boot, not in the command: boot it once more (once), the first boot's
# kernel log kept beside the second's.
boot_again() {
	[ ! -s "$status_file" ] && [ -z "${LAB_VM_REBOOTED:-}" ] || return 0
	log "$1: booting it once more"
	[ ! -s "${VM_KLOG:-}" ] || mv "$VM_KLOG" "$VM_KLOG.first-boot"
	[ ! -s "${klog_console:-}" ] || mv "$klog_console" "$klog_console.first-boot"
	rm -f "$status_file" "$cmd_file"
	LAB_VM_REBOOTED=1 exec "$0" "${command[@]}"
}
if [ "$hung" -eq 1 ]; then
	boot_again "its command had not started"
	die "the guest hung (no vCPU ran for $VM_HANG s)$([ -s "$status_file" ] && echo ' while its command ran')"
fi
[ "$signalled" -eq 0 ] || exit "$signalled"
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
	die "the guest did not finish within $VM_TIMEOUT s (VM_TIMEOUT) and was stopped"
fi
# virtme-ng's 255: the guest ended without its command's status (a panic,
# a reboot, QEMU gone).  Say so, with the end of its kernel log if kept.
guest_status=$(cat "$status_file" 2>/dev/null || true)
if [ "$status" -eq 255 ] && [[ $guest_status =~ ^[0-9]+$ ]]; then
	status=$guest_status
	log "the guest's command ended with status $status, which virtme-ng did not bring" \
		"back: its init found no virtio port for the command (udev was late) and ran" \
		"it on the console, where its output went too"
fi
# Still 255: no status from the guest.  One that ended before its command
# even started is booted once more: QEMU 10.0's multi-threaded TCG once
# died there on an assertion of its own ("iotlb_to_section: Assertion
# `section_index < d->map.sections_nb' failed", 79 s into a debug kernel's
# boot).
if [ "$status" -eq 255 ]; then
	boot_again "error: the guest ended before its command started (QEMU or the kernel died booting)"
	log "error: the guest ended before its command did (no exit status: a kernel panic?)"
	if [ -s "${VM_KLOG:-}" ]; then
		log "the end of its kernel log ($VM_KLOG):"
		tail -n 40 "$VM_KLOG" >&2
	fi
	if [ -s "${klog_console:-}" ]; then
		log "its console, where an oops or panic is written ($klog_console):"
		tail -n 60 "$klog_console" >&2
	elif [ -n "${klog_console:-}" ]; then
		log "its console ($klog_console) holds no oops or panic: QEMU itself may have died"
	fi
fi
exit "$status"
