# shellcheck shell=bash disable=SC2034  # variables for sweep.sh
# grep: search a Linux tree for the system-call instruction; sourced by
# sweep.sh.  Before each group of repeats (one loop count) the page cache
# is dropped and one untimed grep reads the files back in, so the repeats
# time the search and its system calls, not the disk.  What is searched:
#   full   the whole tree
#   vm     GREP_VM_DIRS: about 7 s in the TCG VM (the whole tree: minutes)
#   small  GREP_SMALL_DIRS: for the tests
WL_LOOPS=0:500:50
WL_REPEATS=5
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
# first match when its output is /dev/null).
grep_once() {
	# shellcheck disable=SC2046  # the folders are words
	(cd "$TREE" && grep -rF "$GREP_PATTERN" -- $(grep_dirs) >"$SCRATCH/grep.out")
}

wl_prepare() { :; }

wl_point_begin() {
	drop_caches
	grep_once || die "grep -rF $GREP_PATTERN found nothing or failed in $TREE"
}

wl_run() {
	local dirs
	dirs=$(grep_dirs)
	# shellcheck disable=SC2016,SC2086  # for the inner shell; the folders are words
	timed grep "$LAB_DIR/logs/grep-$TAG-$REPEAT.txt" bash -c \
		'cd "$1" && out=$2 && shift 2 && exec grep -rF "$@" >"$out"' grep \
		"$TREE" "$SCRATCH/grep.out" "$GREP_PATTERN" -- $dirs
}

wl_finish() { :; }
