# shellcheck shell=bash disable=SC2034  # variables for sweep.sh
# grep: search a Linux tree for the system-call instruction; sourced by
# sweep.sh.  In the VM one grep under strace finds what grep reads, and
# the timed greps run on a copy of it in memory (common.sh, staging): they
# time the search and its system calls, not the host's files.  Elsewhere
# the page cache is dropped before each group of repeats (one loop count)
# and one untimed grep reads the files back in.  Before each group one
# untimed grep runs either way.  What is searched:
#   full   the whole tree
#   vm     GREP_VM_DIRS: about 7 s in the TCG VM (the whole tree: minutes)
#   small  GREP_SMALL_DIRS: for the tests
WL_ABOUT="grep -r for the system-call instruction ('syscall') over a Linux tree"
WL_LOOPS=0:6000:750
WL_REPEATS=5
WL_POINT_SECONDS=11
WL_STAGE=host
WL_IN_ALL=1
WL_MEASURE="grep 60 greps/min grep"
WL_BAND_POINT="5e-4 0"
WL_BAND_CALLS="0 0.5"
GREP_PATTERN=syscall
GREP_VM_DIRS="kernel mm"
GREP_SMALL_DIRS="kernel/time"

grep_dirs() {
	case $SCALE in
	full) echo . ;;
	vm) echo "$GREP_VM_DIRS" ;;
	small) echo "$GREP_SMALL_DIRS" ;;
	esac
}

wl_check() {
	check_tree
}

wl_settings() {
	local d
	d=$(grep_dirs)
	printf '%s\n' "pattern=$GREP_PATTERN" "dirs=${d// /,}"
}

# One grep, its output into the scratch folder (GNU grep stops at the
# first match when its output is /dev/null); in the staged root if there
# is one.
grep_cmd() {
	local dirs
	read -r -a dirs <<<"$(grep_dirs)"
	# shellcheck disable=SC2016  # for the inner shell
	GREP_CMD=(bash -c 'cd "$1" && out=$2 && shift 2 && exec grep -rF "$@" >"$out"' grep
		"$TREE" "$SCRATCH/grep.out" "$GREP_PATTERN" -- "${dirs[@]}")
}

WL_STAGE_TREES=()
wl_stage_record() {
	grep_cmd
	stage_record grep "${GREP_CMD[@]}"
}

wl_prepare() {
	grep_cmd
	if stage_wanted; then stage_workload; fi
}

wl_point_begin() {
	[ -n "$STAGE" ] || drop_caches
	"${WL_EXEC[@]}" "${GREP_CMD[@]}" ||
		die "grep -rF $GREP_PATTERN found nothing or failed in $TREE"
}

wl_run() {
	timed grep "$LAB_DIR/logs/grep-$TAG-$REPEAT.txt" "${WL_EXEC[@]}" "${GREP_CMD[@]}"
}

wl_finish() { :; }
