# shellcheck shell=bash disable=SC2034  # variables for sweep.sh
# The workload's files in memory (staging); sourced by common.sh.
# In the VM the root file system is the host's, over 9p.  Before the first
# timed run the workload runs once under strace (its wl_stage_record), and
# lablib.sweep.stage copies everything it touched into a root of its own,
# at the same paths; the timed runs then run chrooted in a tmpfs holding
# that root, entered through its dynamic loader and chroot, so that not
# even their start reads the host's files.
#
# Under TCG the guest copies slowly (a kbuild's 600 MB and 36,000 files
# took more than 15 minutes), so 'lab sweep' records and stages on the
# host, natively, into an archive (sweep.sh --stage-only DIR PLAN), and
# the guest only unpacks it (the plan's STAGE_FROM); a sweep without one
# records and copies in the guest.  STAGE is the root, empty when
# nothing is staged (the root is not 9p: on hardware, where the page cache
# does the same; or --no-stage).
STAGE=
# The staged root's loader and libraries, to run one of its programs
# from outside it (stage_workload).
STAGE_RUN=()
# How every workload command starts: in the staged root if there is one,
# and in a fixed environment (WL_ENV), the same on the host that stages and
# in the guest that runs: the kernel's Makefile asks the PATH for rustc,
# and a guest that found another answer than the host reconfigured the
# staged tree; and kbuild writes the user's and the host's names into
# include/generated/compile.h, which the guest then rewrote with a program
# the host's build had not run.
WL_ENV_VARS=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
	LC_ALL=C CCACHE_DISABLE=1 KBUILD_BUILD_USER=lab KBUILD_BUILD_HOST=lab)
WL_ENV=(env -i "${WL_ENV_VARS[@]}")
WL_EXEC=("${WL_ENV[@]}")
# What a file of hooks (another experiment's, lab sweep --hooks) runs
# the work under; empty otherwise: WL_TAX, what a server runs under (after
# WL_EXEC, in the staged root); SERVER_TRACER, a tracer a server runs
# under instead, from outside the work cgroup; TIMED_TAX, what the shell
# of each timed() window runs under, started before the window opens (the
# hooks' experiment says why); STAGE_PROGRAMS, programs the staged root
# holds for them.
STAGE_PROGRAMS=()
WL_TAX=()
SERVER_TRACER=()
TIMED_TAX=()
STAGE_INFO='"none"'
STAGE_LOGS=()
STAGE_TRACE=(-e 'trace=%file,%process,chdir,fchdir')
# The recorded run's output, if the workload compares it with a staged
# run's (lablib.sweep.stage --output: its digest in STAGE_INFO);
# STAGE_CHECK what the comparison found (meta.json's stage_check).
STAGE_OUTPUT=
STAGE_CHECK=
# What an archive was staged for, if a workload stages different things
# (cmd: its command and folder); the guest refuses an archive of another.
WL_STAGE_KEY=
STAGE_ONLY=
STAGE_FROM=

stage_wanted() {
	[ "$STAGING" -eq 1 ] &&
		[ "$(awk '$2 == "/" { fs = $3 } END { print fs }' /proc/mounts)" = 9p ]
}

# stage_record NAME CMD...: run CMD under strace -f -y, untimed, its
# output into logs/stage-NAME.txt; stage_copy copies what it touched.
stage_record() {
	STAGE_LOGS+=(--log "$SCRATCH/strace-$1.log")
	stage_strace "$@" || die "the $1 run under strace failed; see $LAB_DIR/logs/stage-$1.txt"
}

# stage_record_start NAME CMD...: the same for a server, which strace
# follows until it exits: recorded in the background while the caller
# loads it and stops it, then stage_record_end NAME.
stage_record_start() {
	command -v strace >/dev/null || die "staging needs strace ('make deps')"
	STAGE_LOGS+=(--log "$SCRATCH/strace-$1.log")
	stage_strace "$@" &
	STAGE_TRACER=$!
}
stage_record_end() {
	wait "$STAGE_TRACER" ||
		die "the $1 run under strace failed; see $LAB_DIR/logs/stage-$1.txt"
}

stage_strace() {
	local name=$1 log=$SCRATCH/strace-$1.log
	shift
	command -v strace >/dev/null || die "staging needs strace ('make deps')"
	log "recording the files $name touches (strace, untimed)"
	strace -f -y -qq -o "$log" "${STAGE_TRACE[@]}" -- "${WL_ENV[@]}" "$@" \
		>"$LAB_DIR/logs/stage-$name.txt" 2>&1
}

# stage_copy DEST [lablib.sweep.stage options]: copy what the recorded
# runs touched into DEST, and STAGE_PROGRAMS (a hook's tools); STAGE_INFO
# (meta.json's "stage") says what was copied.
stage_copy() {
	local dest=$1 prog more=()
	shift
	for prog in "${STAGE_PROGRAMS[@]}"; do [ ! -x "$prog" ] || more+=(--program "$prog"); done
	lab_python -m lablib.sweep.stage "$dest" "${STAGE_LOGS[@]}" "$@" "${more[@]}" \
		--program /usr/sbin/chroot --program /usr/bin/env --program /usr/bin/bash \
		${STAGE_OUTPUT:+--output "$STAGE_OUTPUT"} ${WL_STAGE_KEY:+--key "$WL_STAGE_KEY"} \
		--json "$SCRATCH/stage.json" \
		>"$LAB_DIR/logs/stage.txt" 2>&1 || {
		cat "$LAB_DIR/logs/stage.txt" >&2
		die "staging failed; see $LAB_DIR/logs/stage.txt"
	}
	log "$(tail -n 1 "$LAB_DIR/logs/stage.txt")"
	STAGE_INFO=$(tr -d '\n' <"$SCRATCH/stage.json")
}

# stage_archive DIR: (on the host, --stage-only) record the workload and
# write its staged root to DIR/WORKLOAD.tar, what was staged beside it.
# What it leaves until it is done (STAGE_PARTIAL): the caller's EXIT trap
# removes them if it stops first.
STAGE_PARTIAL=()
stage_archive() {
	local dir=$1 tmp
	mkdir -p "$dir" || die "cannot create $dir"
	tmp=$(mktemp -d "$dir/.staging.XXXXXX")
	STAGE_PARTIAL=("$tmp" "$dir/$WORKLOAD.tar.part")
	wl_stage_record
	stage_copy "$tmp" "${WL_STAGE_TREES[@]}"
	tar --format=posix -C "$tmp" -cf "$dir/$WORKLOAD.tar.part" . ||
		die "cannot write $dir/$WORKLOAD.tar"
	rm -rf "$tmp"
	printf '%s\n' "$STAGE_INFO" >"$dir/$WORKLOAD.json"
	mv "$dir/$WORKLOAD.tar.part" "$dir/$WORKLOAD.tar"
	STAGE_PARTIAL=()
	log "staged $WORKLOAD for the VM in $dir/$WORKLOAD.tar"
}

# stage_workload: (wl_prepare, when stage_wanted) the workload's root in a
# tmpfs: unpacked from --stage-from's archive if it has one for the
# workload, else recorded and copied here; /dev, /proc and a /tmp mounted
# in it; STAGE and WL_EXEC set.
stage_workload() {
	local loader libdir archive=${STAGE_FROM:+$STAGE_FROM/$WORKLOAD.tar} t0=$SECONDS
	command -v jq >/dev/null || die "staging needs jq ('make deps')"
	STAGE=/run/lab-stage-$$
	mkdir -p "$STAGE"
	mount -t tmpfs -o mode=755 lab-stage "$STAGE" || die "cannot mount a tmpfs on $STAGE"
	if [ -n "$archive" ] && [ -f "$archive" ]; then
		[ -f "${archive%.tar}.json" ] || die "no ${archive%.tar}.json beside $archive"
		[ "$(jq -r '.key // ""' "${archive%.tar}.json")" = "$WL_STAGE_KEY" ] ||
			die "$archive was staged for another $WORKLOAD (another command or folder); stage again (lab sweep does)"
		log "unpacking $archive into $STAGE (tmpfs)"
		# Read in large pieces: tar's own 10 KiB reads are one 9p request
		# each, and took minutes for kbuild's archive under TCG.
		dd if="$archive" bs=4M status=none | tar -C "$STAGE" -xpf - ||
			die "cannot unpack $archive"
		STAGE_INFO=$(jq -c --arg archive "$archive" --argjson unpack_seconds $((SECONDS - t0)) \
			'{$archive, $unpack_seconds} + .' "${archive%.tar}.json") ||
			die "cannot read ${archive%.tar}.json"
	else
		wl_stage_record
		log "copying what it touched into $STAGE (tmpfs; 'make sweep' stages on the host)"
		stage_copy "$STAGE" "${WL_STAGE_TREES[@]}"
	fi
	mkdir -p "$STAGE/dev" "$STAGE/proc" "$STAGE/tmp"
	chmod 1777 "$STAGE/tmp"
	mount --rbind /dev "$STAGE/dev" || die "cannot mount /dev in $STAGE"
	mount -t proc proc "$STAGE/proc" || die "cannot mount /proc in $STAGE"
	loader=$(readlink -f /lib64/ld-linux-x86-64.so.2)
	libdir=$(dirname "$(readlink -f /lib/x86_64-linux-gnu/libc.so.6)")
	[ -x "$STAGE$loader" ] || die "staging copied no dynamic loader ($loader)"
	[ -d "$STAGE$libdir" ] || die "staging copied no libc ($libdir)"
	local prog
	for prog in /usr/bin/bash /usr/sbin/chroot; do
		[ -x "$STAGE$prog" ] ||
			die "the staged root has no $prog (an archive of an older lab? stage again)"
	done
	STAGE_RUN=("$STAGE$loader" --inhibit-cache --library-path "$STAGE$libdir")
	WL_EXEC=("${STAGE_RUN[@]}" "$STAGE/usr/sbin/chroot" "$STAGE" "${WL_ENV[@]}")
	WINDOW_BASH=("${STAGE_RUN[@]}" "$STAGE/usr/bin/bash")
}

# stage_output_matches FILE: FILE, a run's output in the staged root, is
# what the recorded run printed (STAGE_INFO's output_sha256).
stage_output_matches() {
	local want got
	want=$(jq -r '.output_sha256 // ""' <<<"$STAGE_INFO") ||
		die "the staging says nothing of the recorded run's output"
	[ -n "$want" ] || die "the staging kept no digest of the recorded run's output (an archive of an older lab? stage again)"
	got=$(sha256sum <"$1")
	[ "$want" = "${got%% *}" ]
}

stage_remove() {
	[ -n "$STAGE" ] || return 0
	umount -R "$STAGE/dev" 2>/dev/null || true
	umount "$STAGE/proc" 2>/dev/null || true
	umount "$STAGE" 2>/dev/null || log "warning: could not unmount $STAGE"
	rmdir "$STAGE" 2>/dev/null || true
	STAGE=
	STAGE_RUN=()
	WL_EXEC=("${WL_ENV[@]}")
	WINDOW_BASH=(bash)
}

