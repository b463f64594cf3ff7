#!/usr/bin/env bash
# Workloads' host runner: run sweep.sh, their guest script, in the lab
# kernel's VM and analyse its results here.
#
#   run.sh WORKLOAD [--vms N] [--sshloginfile FILE] [sweep.sh options]
#                                               (what 'make sweep' runs)
#
#   --vms N               split the sweep's points over N VMs that run at
#                         once (GNU parallel), each a part (sweep.sh --part
#                         K/N --points LIST) in its own boot, merged into
#                         one result folder; default: the free cores (cores
#                         less the load average) on the virtual clock, 1 on
#                         the host's.  The sweep says how many and why
#   --sshloginfile FILE   run the parts on these machines too (GNU
#                         parallel's format: one login a line, ':' for this
#                         machine); each needs the lab and this folder at
#                         the same paths, with the same commit and kernel
#                         built (a part from another is refused), and runs
#                         one part at a time.
#                         --vms defaults to the logins in FILE
#
# It reads the sweep's plan once (sweep.sh --plan: its checks, points and
# where each workload stages), lets lablib.sweep.parts choose the VMs and
# deal each part its points, prepares the kbuild object tree and stages
# the host-staged workloads here (sweep.sh --stage-only: recorded under
# strace, what they touched written to build/stage/<workload>.tar, which
# the guest unpacks into memory), runs the VMs, merges the parts
# (lablib.sweep.parts merge) and analyses here ('lab analyse'), where
# Python is fast.  On the virtual clock each point is the same in any boot
# on any machine, so a sweep can be split; on the host's clock VMs side by
# side slow each other down and machines differ: there a sweep runs in one
# VM (workloads/NOTES.md, "Split sweeps").
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

[ $# -ge 1 ] || bad_arg "usage: ${0##*/} WORKLOAD [--vms N] [sweep.sh options] (sweep.sh --help: the workloads)"
workload=$1
shift
vms=
loginfile=
part=
points=()
results=$LAB_ROOT/results
args=()
# cmd's command ('-- COMMAND...'): always last.
wl_command=()
while [ $# -gt 0 ]; do
	case $1 in
	--vms) want_value "$@"; vms=$2; shift 2; continue ;;
	--sshloginfile) want_value "$@"; loginfile=$2; shift 2; continue ;;
	-o | --output) want_value "$@"; results=$2; shift 2; continue ;;
	--part) want_value "$@"; part=$2; shift 2; continue ;;
	--points) want_value "$@"; points+=(--points "$2"); shift 2; continue ;;
	--stage-only | --stage-from | --plan)
		bad_arg "$1 is for sweep.sh; ${0##*/} plans and stages itself" ;;
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

# A whole sweep takes a while under TCG; 'all' is three of them.  The
# guest holds the staged files in memory (a kbuild's: 650 MB).
export VM_TIMEOUT=${VM_TIMEOUT:-21600}
export VM_MEM=${VM_MEM:-4G}
# The virtual clock under TCG, the host's under KVM (VM_CLOCK=host keeps
# the host's): on it every point is the same on every machine.
export VM_CLOCK=${VM_CLOCK:-auto}
# One vCPU on the virtual clock (NOTES.md, "One vCPU"): its instruction
# count is global, so with two a reply's time includes the other vCPU's
# turns.
export VM_VIRTUAL_CPUS=${VM_VIRTUAL_CPUS:-1}
clock=$("$LAB_VM" --clock)
# The guest is a VM: its scale, unless given (a later --scale wins).
args=(--scale vm "${args[@]}")

# --- Plan (here, once): sweep.sh's checks and points, then their split ------
# sweep.sh --plan checks every option (status 2 on a bad one) and prints,
# for each workload of the sweep, its points, their cost, where it stages
# and its scale, as the guest's sweep.sh will see them (LAB_CMDLINE: the
# guest's clock).
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'lab.clock=%s\n' "$clock" >"$work/cmdline"
LAB_CMDLINE=$work/cmdline "$LAB_ROOT/workloads/sweep.sh" "$workload" "${args[@]}" "${points[@]}" \
	${part:+--part "$part"} --plan "${wl_command[@]}" >"$work/plan" 2>"$work/plan.err" ||
	{ status=$?; cat "$work/plan.err" >&2; exit "$status"; }
split=(--clock "$clock")
[ -z "$vms" ] || split+=(--vms "$vms")
if [ -n "$loginfile" ]; then
	nlogins=$(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$loginfile" | wc -l)
	[ "$nlogins" -gt 0 ] || bad_arg "--sshloginfile $loginfile names no machine"
	split+=(--logins "$nlogins")
fi
[ -z "$part" ] || split=(--clock "$clock" --vms 1)
lab_python -m lablib.sweep.parts plan "${split[@]}" "$work/plan" >"$work/split" ||
	exit $?
declare -A stage scale part_points
workloads=() total=0 vms=1 why=
while read -r kind rest; do
	read -r a b c <<<"$rest"
	case $kind in
	vms) vms=$a ;;
	why) why=$rest ;;
	total) total=$a ;;
	stage) stage[$a]=$b; workloads+=("$a") ;;
	scale) scale[$a]=$b ;;
	part) part_points[$a:$b]=$c ;;
	esac
done <"$work/split"

# --- Prepare and stage (here, once) -----------------------------------------
# The kbuild object tree is prepared here, natively: in the TCG guest
# configuring a kernel tree alone takes minutes.  The workloads the plan
# stages on the host (WL_STAGE=host) are recorded here under strace and
# what they touched written to build/stage/<workload>.tar, which the guest
# unpacks into memory (--stage-from); the others stage in the VM.
stage_args=()
prepare() {
	local w host=()
	for w in "${workloads[@]}"; do
		[ "$w" != kbuild ] ||
			"$LAB_ROOT/workloads/kbuild-prepare.sh" "${scale[$w]}" "$LAB_BUILD/kbuild-${scale[$w]}" \
				"$LAB_BUILD/src/linux-source-6.12"
		[ "${stage[$w]}" != host ] || host+=("$w")
	done
	[ ${#host[@]} -gt 0 ] || return 0
	"$LAB_ROOT/workloads/sweep.sh" "$workload" "${args[@]}" --stage-only "$LAB_BUILD/stage" \
		"${wl_command[@]}"
}
for w in "${workloads[@]}"; do
	[ "${stage[$w]}" != host ] || stage_args=(--stage-from "$LAB_BUILD/stage")
done
# A part that a parallel sweep here started: the sweep has staged.  On
# another machine a part stages there, one part at a time.
if [ "${LAB_SWEEP_STAGED:-0}" != 1 ]; then
	mkdir -p "$LAB_BUILD"
	exec 9>"$LAB_BUILD/stage.lock"
	flock 9
	prepare
	flock -u 9
fi

# --- One part of a split sweep: its folder, no analysis ---------------------
if [ -n "$part" ]; then
	out=${PART_OUTPUT:-$results}
	mkdir -p "$out"
	# Where it ran, for the merged folder's parts.json.
	where=${PARALLEL_SSHLOGIN:-:}
	[ "$where" != : ] || where=local
	echo "$where" >"$out/where"
	rm -rf "$work"
	exec "$LAB_VM" -- "$LAB_ROOT/workloads/sweep.sh" "$workload" "${args[@]}" \
		--part "$part" "${points[@]}" "${stage_args[@]}" -o "$out" "${wl_command[@]}"
fi

mkdir -p "$results"
# A finished sweep points results/latest-<workload> at its folder; an
# interrupted one leaves <workload>-<time>.incomplete/ and says so itself.
declare -A before
for w in "${workloads[@]}"; do before[$w]=$(readlink "$results/latest-$w" || true); done
status=0
log "$workload on the $clock clock: $total points in $vms VM$([ "$vms" -eq 1 ] || echo "s at once"${loginfile:+", over $loginfile"}) ($why)"

# --- Serial: one VM ---------------------------------------------------------
# The VM's lines pass through lablib.sweep.parts progress, which adds the
# whole sweep's progress in the host's time after each point (sweep.sh's own
# elapsed and ETA are the guest's, on the virtual clock far from the host's).
if [ "$vms" -eq 1 ]; then
	set +e
	"$LAB_VM" -- "$LAB_ROOT/workloads/sweep.sh" "$workload" "${args[@]}" "${stage_args[@]}" \
		--no-analysis -o "$results" "${wl_command[@]}" 2>&1 |
		lab_python -m lablib.sweep.parts progress "$total"
	pipe=("${PIPESTATUS[@]}")
	set -e
	status=${pipe[0]}
	[ "${pipe[1]}" -eq 0 ] || [ "$status" -ne 0 ] || status=1
fi

# --- Split: N parts at once, merged --------------------------------------
# split_sweep: run the parts with GNU parallel, each part in one boot for
# every workload of the sweep ('all' is three), each given its points
# (lablib.sweep.parts plan), merge each workload's parts into a new result
# folder and point results/latest-W at it.
split_sweep() {
	local w n=$vms id parts_dir env_args=() k ks v
	command -v parallel >/dev/null || die "GNU parallel is not installed ('make deps')"
	id=$workload-$(date +%Y%m%d-%H%M%S)-$$
	parts_dir=$LAB_BUILD/sweep-parts/$id
	mkdir -p "$parts_dir"
	log "$workload: the parts in $parts_dir"
	for v in VM_CLOCK VM_MEM VM_TIMEOUT VM_VIRTUAL_CPUS VARIANT LAB_VM; do
		[ -z "${!v:-}" ] || env_args+=("$v=${!v}")
	done
	# The command of each part on any machine: the lab at this path, run
	# from this folder (cmd's command runs in it), with its points.
	mapfile -t ks < <(seq "$n")
	for k in "${ks[@]}"; do
		local pts=()
		for w in "${workloads[@]}"; do
			if [ "$workload" = all ]; then
				pts+=(--points "$w:${part_points[$k:$w]}")
			else
				pts+=(--points "${part_points[$k:$w]}")
			fi
		done
		printf '%s\n' "cd $(sh_quote "$PWD") && env $(sh_quote "${env_args[@]}") \
PART_OUTPUT=$(sh_quote "$parts_dir/$k") LAB_SWEEP_STAGED=\$([ \"\$PARALLEL_SSHLOGIN\" = : ] && echo 1 || echo 0) \
$(sh_quote "$LAB_ROOT/workloads/run.sh" "$workload" "${args[@]}" --part "$k/$n" "${pts[@]}") \
$(sh_quote "${wl_command[@]}")"
	done >"$parts_dir/commands"
	local par=(parallel --line-buffer --halt "now,fail=1" --tagstring "part {#}/$n")
	if [ -n "$loginfile" ]; then
		par+=(--sshloginfile "$loginfile" --jobs 1 --workdir "$LAB_ROOT" --return "$parts_dir/{#}"
			--cleanup)
		[ -z "${LAB_SSH:-}" ] || par+=(--ssh "$LAB_SSH")
	else
		par+=(--jobs "$n")
	fi
	local pstatus=0
	"${par[@]}" <"$parts_dir/commands" 2>&1 |
		lab_python -m lablib.sweep.parts progress "$total" || pstatus=$?
	if [ "$pstatus" -ne 0 ]; then
		log "a part failed (exit status $pstatus); the parts are in $parts_dir"
		return 1
	fi
	local failed=0
	for w in "${workloads[@]}"; do
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
	if ! lab_python -m lablib.sweep.parts merge "${where[@]}" "$LAB_DIR" "${folders[@]}"; then
		log "$w: the parts could not be merged; they are in $parts_dir"
		return 1
	fi
	lab_commit "$w"
	log "$w: $# parts merged into $LAB_DIR"
}
if [ "$vms" -gt 1 ]; then
	split_sweep || status=1
fi

for w in "${workloads[@]}"; do
	now=$(readlink "$results/latest-$w" || true)
	if [ -z "$now" ] || [ "$now" = "${before[$w]}" ]; then
		log "no new $w sweep (exit status $status)"
		[ "$status" -ne 0 ] || status=1
		continue
	fi
	LAB_DIR=$results/$now
	lab_analyse 1 || status=1
done
exit "$status"
