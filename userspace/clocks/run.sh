#!/usr/bin/env bash
# The lab's headline figures under both clocks: for each clock (VM_CLOCK=
# host, then virtual; README.md "The VM") short runs of calibrate,
# rt-compare (stock and rt), smp, msgq, a cmd sweep (md5sum over the
# top-level files of the tree's kernel/) and a kbuild and a grep sweep of
# one delayed point each (make sweep's, staged: lab sweep), each in its
# own boot and result folder, each analysed on the host, then
# lablib.clocks.analyse over them all into results/clocks-<date>-<time>/
# (report.txt, clocks.csv, clocks.json).  The kbuild and grep pairs show
# what the virtual clock leaves out: on the host's clock a delayed call
# also costs the caches and TLB entries the spin evicts, on the virtual
# clock only its instructions.
#
#   run.sh [--only LIST] [--clocks LIST] [--no-analysis]
#   --only LIST     experiments, of calibrate,rt-compare,smp,msgq,sweep,
#                   kbuild,grep (default all of them this lab has)
#   --clocks LIST   host,virtual (the default), or one of them
#   --no-analysis   record only: no analyser and no report; says how to
#                   make them later
#
# The virtual clock needs TCG; on a host with a working KVM, VM_ACCEL=tcg
# makes the host clock's runs emulated too, a like-for-like pair.
# An experiment that fails is named at the end (exit status 1); the others
# are still run and compared.
#
# Example:  userspace/clocks/run.sh --only calibrate,smp   (make clocks CLOCKS_ARGS='--only calibrate,smp')
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../scripts/lib.sh"
lab_help "$@"

# The experiments this lab has (one deleted is not offered).
ALL=()
for e in calibrate:userspace/calibrate/run.sh rt-compare:userspace/rtcompare/run.sh \
	smp:userspace/smp/run.sh msgq:userspace/msgq/run.sh sweep:workloads/sweep.sh \
	kbuild:workloads/sweep.sh grep:workloads/sweep.sh; do
	[ ! -x "$LAB_ROOT/${e#*:}" ] || ALL+=("${e%%:*}")
done
only=$(IFS=,; printf '%s' "${ALL[*]}") clocks=host,virtual analysis=1
while [ $# -gt 0 ]; do
	case $1 in
	--only) want_value "$@"; only=$2; shift ;;
	--clocks) want_value "$@"; clocks=$2; shift ;;
	--no-analysis) analysis=0 ;;
	*) bad_arg "unknown argument '$1' (see --help)" ;;
	esac
	shift
done
IFS=, read -r -a exps <<<"$only"
[ ${#exps[@]} -ge 1 ] || bad_arg "--only wants a list of $(IFS=,; printf '%s' "${ALL[*]}"), not '$only'"
for e in "${exps[@]}"; do
	[[ " ${ALL[*]} " == *" $e "* ]] ||
		bad_arg "--only wants a list of $(IFS=,; printf '%s' "${ALL[*]}"), not '$only'"
done
IFS=, read -r -a clist <<<"$clocks"
[ ${#clist[@]} -ge 1 ] || bad_arg "--clocks wants host, virtual or host,virtual, not '$clocks'"
for c in "${clist[@]}"; do
	case $c in
	host | virtual) ;;
	*) bad_arg "--clocks wants host, virtual or host,virtual, not '$clocks'" ;;
	esac
done
lab_built "$LAB_TOOL"

results=$LAB_ROOT/results
mkdir -p "$results"
latest() { readlink "$results/latest-$1" || true; }
folders=() failed=()

# run_in EXPERIMENT LINK ANALYSE COMMAND...: run COMMAND (a runner), find
# the folder it pointed results/latest-LINK at, analyse it with 'lab
# analyse' (ANALYSE lab) unless the runner did (-) or --no-analysis; add
# it to folders.
run_in() {
	local exp=$1 link=$2 analyse=$3 before now
	shift 3
	before=$(latest "$link")
	log "$exp on the $VM_CLOCK clock: $*"
	"$@" || { log "$exp on the $VM_CLOCK clock failed"; return 1; }
	now=$(latest "$link")
	if [ -z "$now" ] || [ "$now" = "$before" ]; then
		log "$exp on the $VM_CLOCK clock left no new results/latest-$link"
		return 1
	fi
	LAB_DIR=$results/$now
	if [ "$analyse" != - ]; then
		lab_analyse "$analysis" || return 1
	fi
	folders+=("$LAB_DIR")
}

no_analysis=()
[ "$analysis" -eq 1 ] || no_analysis=(--no-analysis)
start=$(date +%s)
for clock in "${clist[@]}"; do
	export VM_CLOCK=$clock
	for e in "${exps[@]}"; do
		case $e in
		calibrate)
			run_in calibrate calibrate - "$LAB_ROOT/userspace/calibrate/run.sh" \
				"${no_analysis[@]}" -l 0:700:100 -n 50 -q
			;;
		rt-compare)
			run_in rt-compare rt-compare - "$LAB_ROOT/userspace/rtcompare/run.sh" \
				--variants stock,rt "${no_analysis[@]}" -- --only cyclictest,delay \
				--ct-loops 3000 --delay-loops 1000
			;;
		smp)
			run_in smp smp - "$LAB_ROOT/userspace/smp/run.sh" -r 1 "${no_analysis[@]}"
			;;
		msgq)
			run_in msgq msgq-profile - "$LAB_ROOT/userspace/msgq/run.sh" -r 3 -n 5000 \
				"${no_analysis[@]}"
			;;
		# md5sum over the top-level .c files of the tree's kernel/
		# (about 150, 3.5 MB), in that folder; lab sweep stages it.
		sweep)
			cd "$LAB_BUILD/src/linux-source-6.12/kernel"
			status=0
			run_in sweep cmd - "$LAB_VENV/bin/lab" sweep cmd --ns 0,5000,20000 -r 3 \
				-- md5sum ./*.c || status=$?
			cd "$OLDPWD"
			[ "$status" -eq 0 ]
			;;
		# About d-half on the virtual clock (workloads/README.md): the
		# delay doubles a unit of work there.  lab sweep analyses.
		kbuild)
			run_in kbuild kbuild - "$LAB_VENV/bin/lab" sweep kbuild \
				-l 0,10000 -r 2
			;;
		grep)
			run_in grep grep - "$LAB_VENV/bin/lab" sweep grep -l 0,5000 -r 3
			;;
		esac || failed+=("$e/$clock")
	done
done
log "measured in $(($(date +%s) - start)) s: ${folders[*]:-nothing}"

if [ ${#folders[@]} -gt 0 ]; then
	if [ "$analysis" -eq 1 ]; then
		lab_python -m lablib.clocks.analyse "${folders[@]}" || failed+=(lablib.clocks.analyse)
	else
		log "analyse each folder with lab analyse DIR, then:" \
			"python -m lablib.clocks.analyse ${folders[*]}"
	fi
fi
[ ${#failed[@]} -eq 0 ] || die "failed: ${failed[*]}"
