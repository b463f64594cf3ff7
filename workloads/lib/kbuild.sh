# shellcheck shell=bash disable=SC2034  # variables for sweep.sh
# kbuild: build (part of) a Linux tree; sourced by sweep.sh.
#
# Each run removes the previous build's products off the clock, drops the
# page cache, and times make -j$JOBS.  The object tree is prepared once by
# workloads/kbuild-prepare.sh ('make sweep' does that on the host, where it
# is fast; in the TCG VM it takes minutes).  What one run builds:
#   full   defconfig, 'make' (vmlinux, modules, bzImage); 'make clean' first
#   vm     tinyconfig, KBUILD_VM_TARGETS (deleted first): about 90 s in the
#          TCG VM, most of it make reading the tree's Makefiles and gcc
#          starting, both heavy in system calls
#   small  tinyconfig, KBUILD_SMALL_TARGETS (deleted first): for the tests
WL_LOOPS=0:250:50
WL_REPEATS=3
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
}

wl_settings() {
	local t clean=delete-targets
	t=$(kbuild_targets)
	[ "$SCALE" != full ] || clean=make-clean
	printf '%s\n' "object_tree=$KBUILD_OBJ" "jobs=$JOBS" "targets=${t// /,}" "clean=$clean"
}

wl_prepare() {
	"$SWEEP_DIR/kbuild-prepare.sh" "$SCALE" "$KBUILD_OBJ" "$TREE"
	# One untimed build: the first build in a tree may redo more than the
	# targets (a moved tree, a newer compiler); the timed ones must not.
	log "one untimed build to settle the object tree"
	# shellcheck disable=SC2046  # the targets are words
	if ! CCACHE_DISABLE=1 make -s -C "$TREE" O="$KBUILD_OBJ" -j"$JOBS" $(kbuild_targets) \
		>"$LAB_DIR/logs/build-warmup.txt" 2>&1; then
		tail -n 20 "$LAB_DIR/logs/build-warmup.txt" >&2
		die "the build fails (its last lines above); see $LAB_DIR/logs/build-warmup.txt"
	fi
}

wl_point_begin() { :; }

wl_run() {
	local targets t
	targets=$(kbuild_targets)
	# Off the clock: undo the previous build, empty the page cache.
	if [ "$SCALE" = full ]; then
		make -s -C "$TREE" O="$KBUILD_OBJ" clean >/dev/null
	else
		for t in $targets; do rm -f "$KBUILD_OBJ/$t"; done
	fi
	drop_caches
	# shellcheck disable=SC2086  # the targets are words
	CCACHE_DISABLE=1 timed build "$LAB_DIR/logs/build-$TAG-$REPEAT.txt" \
		make -C "$TREE" O="$KBUILD_OBJ" -j"$JOBS" $targets
}

wl_finish() { :; }
