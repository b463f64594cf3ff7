#!/usr/bin/env bash
# Workloads' host runner: run sweep.sh, their guest script, in the lab
# kernel's VM and analyse its results here.
#
#   run.sh WORKLOAD [--vms N] [--sshloginfile FILE] [sweep.sh options]
#                                               (what 'make sweep' runs)
#
#   --vms N               split the sweep's points over N VMs that run at
#                         once (GNU parallel), each a part (sweep.sh --part
#                         K/N) in its own boot, merged into one result
#                         folder (workloads/merge.py); default: the free
#                         cores (cores less the load average) on the virtual
#                         clock, 1 on the host's
#   --sshloginfile FILE   run the parts on these machines too (GNU
#                         parallel's format: one login a line, ':' for this
#                         machine); each needs the lab and this folder at
#                         the same paths, with the same commit and kernel
#                         built (a part from another is refused), and runs
#                         one part at a time.
#                         --vms defaults to the logins in FILE
#
# On the virtual clock each point is the same in any boot on any machine
# (two boots within 0.014 %, 2026-11-26), so a sweep can be split: the
# parts take about as long each, part 1 calibrates, and the merged folder
# has the files a serial sweep writes, each point's lines as its part
# wrote them.  On the host's clock VMs side by side slow each other down
# and machines differ: there a sweep runs in one VM.
#
# The kbuild object tree is prepared here first, natively: in the TCG
# guest configuring a kernel tree alone takes minutes.  kbuild, grep and
# cmd are staged here too (sweep.sh --stage-only: recorded under strace and
# what they touched written to build/stage/<workload>.tar), and the guest
# unpacks that into memory (--stage-from) instead of copying it from the
# host's files itself.  The analysis (summary, model, plot) also runs
# here, where Python is fast.
#
# Environment: VM_CLOCK (default auto: virtual under TCG), VM_MEM,
# VM_TIMEOUT, VM_VIRTUAL_CPUS (scripts/vm.sh); LAB_VM, the VM runner
# (default scripts/vm.sh; the tests give a stand-in).
#
# Example:  workloads/run.sh grep -l 0,200000 -r 1   (sweep.sh --help: its options)
#           workloads/run.sh kbuild --vms 2
set -euo pipefail
. "$(dirname "$0")/../scripts/lib.sh"
lab_help "$@"

[ $# -ge 1 ] || bad_arg "usage: ${0##*/} kbuild|grep|apache|redis|all|cmd [--vms N] [sweep.sh options]"
workload=$1
shift
scale=vm
staging=1
vms=
loginfile=
part=
results=$LAB_ROOT/results
args=()
# cmd's command ('-- COMMAND...'): always last.
wl_command=()
while [ $# -gt 0 ]; do
	case $1 in
	--vms) want_value "$@"; vms=$2; shift 2; continue ;;
	--sshloginfile) want_value "$@"; loginfile=$2; shift 2; continue ;;
	-o | --output) want_value "$@"; results=$2; shift 2; continue ;;
	--part) want_value "$@"; part=$2 ;;
	-s | --scale) [ $# -lt 2 ] || scale=$2 ;;
	--no-stage) staging=0 ;;
	--stage-only | --stage-from)
		bad_arg "$1 is for sweep.sh; ${0##*/} stages kbuild, grep and cmd itself" ;;
	--) wl_command=("$@"); break ;;
	esac
	args+=("$1")
	shift
done
[ -z "$vms" ] || want_uint --vms "$vms" 1
results=$(realpath -m "$results")
LAB_VM=${LAB_VM:-$LAB_ROOT/scripts/vm.sh}
# The lab's VM mounts a /tmp of its own (scripts/vm.sh): what the guest
# wrote there would be gone with it.
case $LAB_VM:$results/ in
"$LAB_ROOT/scripts/vm.sh":/tmp/*)
	bad_arg "-o $results: the VM has a /tmp of its own, and the results would stay in it; give a folder outside /tmp" ;;
esac
[ -z "$loginfile" ] || [ -r "$loginfile" ] ||
	bad_arg "--sshloginfile wants a readable file, not '$loginfile'"
[ -z "$part" ] || [ -z "$vms$loginfile" ] || bad_arg "--part is one part; --vms and --sshloginfile split a sweep"
# sweep.sh's own checks, here before anything boots (status 2 on a bad
# one).  What it says it would do is for the host's clock: not shown.
err=$("$LAB_ROOT/workloads/sweep.sh" "$workload" "${args[@]}" --dry-run "${wl_command[@]}" \
	2>&1 >/dev/null) ||
	{ status=$?; printf '%s\n' "$err" >&2; exit "$status"; }

# A whole sweep takes a while under TCG; 'all' is three of them.  The
# guest holds the staged files in memory (a kbuild's: 650 MB).
export VM_TIMEOUT=${VM_TIMEOUT:-21600}
export VM_MEM=${VM_MEM:-4G}
# The virtual clock under TCG, the host's under KVM (VM_CLOCK=host keeps
# the host's): on it every point is the same on every machine.
export VM_CLOCK=${VM_CLOCK:-auto}
# One vCPU on the virtual clock: its instruction count is global, so with
# two a reply's time included the client's turns on the other vCPU
# (Apache's reference reply: 0.2 ms with one vCPU, 1.1 ms with two, for
# the same 30 server calls, 2026-11-26); kbuild and grep gain nothing
# from a second vCPU that only takes turns with the first.
export VM_VIRTUAL_CPUS=${VM_VIRTUAL_CPUS:-1}

# The logins of an sshloginfile: its lines without comments and blanks.
logins() { sed -e 's/#.*//' -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' -e '/^$/d' "$1"; }
# Cores not busy: the cores less the load average, at least 1.
free_cores() {
	awk -v n="$(nproc)" '{ f = n - int($1 + 0.5); print (f < 1 ? 1 : f) }' /proc/loadavg
}

if [ -z "$part" ]; then
	clock=$("$LAB_VM" --clock)
	if [ -z "$vms" ]; then
		if [ -n "$loginfile" ]; then
			vms=$(logins "$loginfile" | wc -l)
			[ "$vms" -gt 0 ] || bad_arg "--sshloginfile $loginfile names no machine"
		elif [ "$clock" = virtual ]; then
			vms=$(free_cores)
		else
			vms=1
		fi
	fi
	if [ "$vms" -gt 1 ] || [ -n "$loginfile" ]; then
		[ "$clock" = virtual ] ||
			bad_arg "--vms $vms: a sweep is split only on the virtual clock (this one runs on the $clock clock, where VMs side by side slow each other); leave --vms out"
	fi
fi

# --- Prepare and stage (here, once) -----------------------------------------
# The workloads staged here (sweep.sh --stage-only); the others stage in
# the VM.
host_staged="kbuild grep cmd"
prepare() {
	case $workload in
	kbuild | all)
		"$LAB_ROOT/workloads/kbuild-prepare.sh" "$scale" "$LAB_BUILD/kbuild-$scale" \
			"$LAB_BUILD/src/linux-source-6.12"
		;;
	esac
	if [ "$staging" -eq 1 ]; then
		for w in $host_staged; do
			case $workload in "$w" | all)
				"$LAB_ROOT/workloads/sweep.sh" "$w" "${args[@]}" --stage-only "$LAB_BUILD/stage" \
					"${wl_command[@]}" ;;
			esac
		done
	fi
}
# kbuild, grep and cmd are staged here; the servers stage in the VM.
stage_args=()
case " $host_staged all " in
*" $workload "*) [ "$staging" -eq 0 ] || stage_args=(--stage-from "$LAB_BUILD/stage") ;;
esac
# A part that a parallel sweep here started: the sweep has staged.  On
# another machine a part stages there, one part at a time.
if [ "${LAB_SWEEP_STAGED:-0}" != 1 ]; then
	mkdir -p "$LAB_BUILD"
	exec 9>"$LAB_BUILD/stage.lock"
	flock 9
	prepare
	flock -u 9
fi

workloads=$workload
[ "$workload" != all ] || workloads="kbuild grep apache"

# --- One part of a split sweep: its folder, no analysis ---------------------
if [ -n "$part" ]; then
	out=${PART_OUTPUT:-$results}
	mkdir -p "$out"
	# Where it ran, for the merged folder's parts.json.
	where=${PARALLEL_SSHLOGIN:-:}
	[ "$where" != : ] || where=local
	echo "$where" >"$out/where"
	exec "$LAB_VM" -- "$LAB_ROOT/workloads/sweep.sh" "$workload" "${args[@]}" \
		"${stage_args[@]}" -o "$out" "${wl_command[@]}"
fi

mkdir -p "$results"
# A finished sweep points results/latest-<workload> at its folder; an
# interrupted one leaves <workload>-<time>.incomplete/ and says so itself.
declare -A before
for w in $workloads; do before[$w]=$(readlink "$results/latest-$w" || true); done
status=0

# count_points W: how many points sweep.sh runs for W.
count_points() {
	local npoints
	npoints=$("$LAB_ROOT/workloads/sweep.sh" "$1" "${args[@]}" --dry-run "${wl_command[@]}" \
		2>/dev/null | wc -l)
	[ "$npoints" -gt 0 ] || die "$1: sweep.sh --dry-run lists no point"
	echo "$npoints"
}

# --- Serial: one VM ---------------------------------------------------------
# The VM's lines pass through progress.py, which adds the whole sweep's
# progress in the host's time after each point (sweep.sh's own elapsed
# and ETA are the guest's, on the virtual clock far from the host's).
if [ "$vms" -eq 1 ] && [ -z "$loginfile" ]; then
	total=0
	for w in $workloads; do
		npoints=$(count_points "$w")
		total=$((total + npoints))
	done
	set +e
	"$LAB_VM" -- "$LAB_ROOT/workloads/sweep.sh" "$workload" "${args[@]}" "${stage_args[@]}" \
		--no-analysis -o "$results" "${wl_command[@]}" 2>&1 |
		lab_python "$LAB_ROOT/workloads/progress.py" parts "$total"
	pipe=("${PIPESTATUS[@]}")
	set -e
	status=${pipe[0]}
	[ "${pipe[1]}" -eq 0 ] || [ "$status" -ne 0 ] || status=1
fi

# --- Split: N parts at once, merged --------------------------------------
# split_sweep: run the parts with GNU parallel, each part in one boot for
# every workload of the sweep ('all' is three), merge each workload's
# parts into a new result folder and point results/latest-W at it.
split_sweep() {
	local w npoints total=0 n=$vms id parts_dir cmd env_args=() k ks
	command -v parallel >/dev/null || die "GNU parallel is not installed ('make deps')"
	for w in $workloads; do
		npoints=$(count_points "$w")
		total=$((total + npoints))
		[ "$n" -le "$npoints" ] || n=$npoints
	done
	id=$workload-$(date +%Y%m%d-%H%M%S)-$$
	parts_dir=$LAB_BUILD/sweep-parts/$id
	mkdir -p "$parts_dir"
	log "$workload: $total points in $n parts ($n VMs at once${loginfile:+, over $loginfile}): $parts_dir"
	for v in VM_CLOCK VM_MEM VM_TIMEOUT VM_VIRTUAL_CPUS VARIANT LAB_VM; do
		[ -z "${!v:-}" ] || env_args+=("$v=${!v}")
	done
	# The command of part {} on any machine: the lab at this path, run
	# from this folder (cmd's command runs in it).
	cmd="cd $(sh_quote "$PWD") && env $(sh_quote "${env_args[@]}") \
PART_OUTPUT=$(sh_quote "$parts_dir")/{} LAB_SWEEP_STAGED=\$([ \"\$PARALLEL_SSHLOGIN\" = : ] && echo 1 || echo 0) \
$(sh_quote "$LAB_ROOT/workloads/run.sh" "$workload" "${args[@]}") --part {}/$n $(sh_quote "${wl_command[@]}")"
	local par=(parallel --line-buffer --halt "now,fail=1" --tagstring "part {}/$n")
	if [ -n "$loginfile" ]; then
		par+=(--sshloginfile "$loginfile" --jobs 1 --workdir "$LAB_ROOT" --return "$parts_dir/{}"
			--cleanup)
		[ -z "${LAB_SSH:-}" ] || par+=(--ssh "$LAB_SSH")
	else
		par+=(--jobs "$n")
	fi
	local pstatus=0
	mapfile -t ks < <(seq "$n")
	"${par[@]}" "$cmd" ::: "${ks[@]}" 2>&1 |
		lab_python "$LAB_ROOT/workloads/progress.py" parts "$total" || pstatus=$?
	if [ "$pstatus" -ne 0 ]; then
		log "a part failed (exit status $pstatus); the parts are in $parts_dir"
		return 1
	fi
	local failed=0
	for w in $workloads; do
		merge_parts "$w" "$parts_dir" "${ks[@]}" || failed=1
	done
	[ "$failed" -eq 1 ] || rm -rf "$parts_dir"
	return "$failed"
}
# merge_parts W PARTS_DIR K...: W's parts into a new result folder.
merge_parts() {
	local w=$1 parts_dir=$2 k folders=() where=()
	shift 2
	for k in "$@"; do
		if [ ! -L "$parts_dir/$k/latest-$w" ]; then
			log "$w: part $k left no result in $parts_dir/$k"
			return 1
		fi
		folders+=("$parts_dir/$k/$(readlink "$parts_dir/$k/latest-$w")")
		where+=(--where "$k=$(cat "$parts_dir/$k/where" 2>/dev/null || echo unknown)")
	done
	lab_begin "$results" "$w"
	if ! lab_python "$LAB_ROOT/workloads/merge.py" "${where[@]}" "$LAB_DIR" "${folders[@]}"; then
		log "$w: the parts could not be merged; they are in $parts_dir"
		return 1
	fi
	lab_commit "$w"
	log "$w: $# parts merged into $LAB_DIR"
}
if [ "$vms" -gt 1 ] || [ -n "$loginfile" ]; then
	split_sweep || status=1
fi

for w in $workloads; do
	now=$(readlink "$results/latest-$w" || true)
	if [ -z "$now" ] || [ "$now" = "${before[$w]}" ]; then
		log "no new $w sweep (exit status $status)"
		[ "$status" -ne 0 ] || status=1
		continue
	fi
	LAB_DIR=$results/$now
	lab_analyse 1 "$LAB_ROOT/workloads/analyse.py" || status=1
done
exit "$status"
