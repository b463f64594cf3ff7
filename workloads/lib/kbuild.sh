# shellcheck shell=bash disable=SC2034  # variables for sweep.sh
# kbuild: build (part of) a Linux tree; sourced by sweep.sh.
#
# Each run removes the previous build's products off the clock and times
# make -j$JOBS.  In the VM one build under strace finds what the build
# reads, and the timed builds run on a copy of it and of the object tree in
# memory (common.sh, staging): they time the build, not the host's files.
# Elsewhere the page cache is dropped before each build.  The object tree is prepared once by
# workloads/kbuild-prepare.sh ('make sweep' does that on the host, where it
# is fast; in the TCG VM it takes minutes).  What one run builds:
#   full   defconfig, 'make' (vmlinux, modules, bzImage); 'make clean' first
#   vm     tinyconfig, KBUILD_VM_TARGETS (deleted first): about 90 s in the
#          TCG VM, most of it make reading the tree's Makefiles and gcc
#          starting, both heavy in system calls
#   small  tinyconfig, KBUILD_SMALL_TARGETS (deleted first): for the tests
WL_ABOUT="build a Linux tree, its objects cleaned and the page cache dropped first"
WL_LOOPS=0:12000:1500
WL_REPEATS=3
WL_POINT_SECONDS=40
WL_STAGE=host
WL_IN_ALL=1
WL_MEASURE="build 3600 builds/hour build"
WL_BAND_POINT="1e-3 0"
WL_BAND_CALLS="2e-3 0"
KBUILD_VM_TARGETS="lib/string.o"
KBUILD_SMALL_TARGETS="lib/ctype.o"

kbuild_targets() {
	case $SCALE in
	full) echo "" ;;
	vm) echo "$KBUILD_VM_TARGETS" ;;
	small) echo "$KBUILD_SMALL_TARGETS" ;;
	esac
}

wl_check() {
	check_tree
	command -v make >/dev/null || die "kbuild needs make"
	command -v gcc >/dev/null || die "kbuild needs gcc"
	KBUILD_OBJ=${KBUILD_OBJ:-$LAB_BUILD/kbuild-$SCALE}
	WL_STAGE_TREES=(--tree "$KBUILD_OBJ")
}

wl_settings() {
	local t clean=delete-targets
	t=$(kbuild_targets)
	[ "$SCALE" != full ] || clean=make-clean
	printf '%s\n' "object_tree=$KBUILD_OBJ" "jobs=$JOBS" "targets=${t// /,}" "clean=$clean"
}

# On the host before the boot (lab sweep): the object tree configured,
# natively (fast there).
wl_host() {
	wl_check
	"$SWEEP_DIR/kbuild-prepare.sh" "$SCALE" "$KBUILD_OBJ" "$TREE"
}

# The object tree prepared, and built once untimed: the first build in a
# tree may redo more than the targets (a moved tree, a newer compiler);
# the timed ones must not.
kbuild_settle() {
	"$SWEEP_DIR/kbuild-prepare.sh" "$SCALE" "$KBUILD_OBJ" "$TREE"
	log "one untimed build to settle the object tree"
	# shellcheck disable=SC2046  # the targets are words
	if ! "${WL_EXEC[@]}" make -s -C "$TREE" O="$KBUILD_OBJ" -j"$JOBS" $(kbuild_targets) \
		>"$LAB_DIR/logs/build-warmup.txt" 2>&1; then
		tail -n 20 "$LAB_DIR/logs/build-warmup.txt" >&2
		die "the build fails (its last lines above); see $LAB_DIR/logs/build-warmup.txt"
	fi
}

# Staging: the tree settled, then one build of the targets under strace.
wl_stage_record() {
	kbuild_settle
	kbuild_clean ""
	# shellcheck disable=SC2046  # the targets are words
	stage_record kbuild make -C "$TREE" O="$KBUILD_OBJ" -j"$JOBS" \
		$(kbuild_targets)
}

wl_prepare() {
	if ! stage_wanted; then
		kbuild_settle
		return
	fi
	stage_workload
	# One untimed build in the staged root: it must build there alone.
	log "one untimed build in $STAGE"
	kbuild_clean "$STAGE"
	# shellcheck disable=SC2046  # the targets are words
	if ! "${WL_EXEC[@]}" make -s -C "$TREE" O="$KBUILD_OBJ" -j"$JOBS" \
		$(kbuild_targets) >"$LAB_DIR/logs/build-staged.txt" 2>&1; then
		tail -n 20 "$LAB_DIR/logs/build-staged.txt" >&2
		die "the build fails in the staged root (its last lines above); see $LAB_DIR/logs/build-staged.txt"
	fi
}

# kbuild_clean ROOT: undo the last build in the object tree under ROOT
# (the staged root, or "" for the tree itself).
kbuild_clean() {
	local t
	if [ "$SCALE" = full ]; then
		"${WL_EXEC[@]}" make -s -C "$TREE" O="$KBUILD_OBJ" clean >/dev/null
	else
		for t in $(kbuild_targets); do rm -f "$1$KBUILD_OBJ/$t"; done
	fi
}

wl_point_begin() { :; }

wl_run() {
	# Off the clock: undo the previous build (and empty the page cache,
	# unless the build runs in memory).
	kbuild_clean "$STAGE"
	[ -n "$STAGE" ] || drop_caches
	# shellcheck disable=SC2046  # the targets are words
	timed build "$LAB_DIR/logs/build-$TAG-$REPEAT.txt" \
		"${WL_EXEC[@]}" make -C "$TREE" O="$KBUILD_OBJ" -j"$JOBS" $(kbuild_targets)
}

wl_finish() { :; }
