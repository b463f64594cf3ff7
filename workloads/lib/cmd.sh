# shellcheck shell=bash disable=SC2034  # variables for sweep.sh
# cmd: time any command, once per repeat; sourced by sweep.sh.  A single
# argument with a space in it is run with 'bash -c'.
#
# The command runs in the working directory the sweep was started in and
# in the lab's fixed environment (common.sh's WL_ENV_VARS), the same when
# it is recorded and when it is timed.  Where the root is the host's files
# (the VM) it is staged as kbuild and grep are (common.sh, staging): run
# once under strace, what it touched copied into memory, the timed runs
# chrooted there.  One untimed run in the staged root must print what the
# recorded run printed; one that does not (it reads a file it did not read
# then, or prints something new each run) and one that talked to the
# network are recorded in meta.json (stage_check, stage.network) and
# lablib.sweep.analyse says each point is not exact, and why.
WL_ABOUT="time COMMAND (after '--') in this folder, in a fixed environment"
WL_LOOPS=0:500:100
WL_REPEATS=3
WL_POINT_SECONDS=10
WL_STAGE=host
WL_MEASURE="cmd 60 runs/min run"
WL_COMMAND=1
CMD_CWD=

wl_check() {
	if [ ${#COMMAND[@]} -eq 1 ] && [[ ${COMMAND[0]} == *" "* ]]; then
		COMMAND=(bash -c "${COMMAND[0]}")
	fi
	command -v "${COMMAND[0]}" >/dev/null || die "command not found: ${COMMAND[0]}"
	CMD_CWD=$PWD
	WL_ENV=(env -i -C "$CMD_CWD" "${WL_ENV_VARS[@]}")
	WL_EXEC=("${WL_ENV[@]}")
	# Its working directory is staged even if it names nothing in it, and
	# the network calls are recorded with the files.
	WL_STAGE_TREES=(--path "$CMD_CWD")
	STAGE_TRACE=(-e 'trace=%file,%process,%network,chdir,fchdir')
	WL_STAGE_KEY=$(printf '%s\0' "$CMD_CWD" "${COMMAND[@]}" | sha256sum)
	WL_STAGE_KEY=${WL_STAGE_KEY%% *}
}

wl_settings() { printf '%s\n' "cwd=$CMD_CWD"; }

wl_stage_record() {
	stage_record cmd "${COMMAND[@]}"
	STAGE_OUTPUT=$LAB_DIR/logs/stage-cmd.txt
}

# One untimed run, so that the first timed one does not read the
# command's files alone; in the staged root, compared with the recorded one.
wl_prepare() {
	local out=$LAB_DIR/logs/cmd-warmup.txt
	if stage_wanted; then stage_workload; fi
	"${WL_EXEC[@]}" "${COMMAND[@]}" >"$out" 2>&1 ||
		die "the command fails${STAGE:+ in the staged root}; see $out"
	[ -n "$STAGE" ] || return 0
	if stage_output_matches "$out"; then
		STAGE_CHECK="same output as recorded"
	else
		STAGE_CHECK="output differs from the recorded run"
		log "warning: in the staged root the command printed what it did not print when it was recorded (compare $out with logs/stage-cmd.txt): it reads something it did not read then, or its output changes run to run; no point is exact"
	fi
}
wl_point_begin() { :; }

wl_run() {
	timed cmd "$LAB_DIR/logs/cmd-$TAG-$REPEAT.txt" "${WL_EXEC[@]}" "${COMMAND[@]}"
}

wl_finish() { :; }
