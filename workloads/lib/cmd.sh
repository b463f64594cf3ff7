# shellcheck shell=bash disable=SC2034  # variables for sweep.sh
# cmd: time any command, once per repeat; sourced by sweep.sh.  A single
# argument with a space in it is run with 'bash -c'.
WL_LOOPS=0:500:100
WL_REPEATS=3

wl_check() {
	if [ ${#COMMAND[@]} -eq 1 ] && [[ ${COMMAND[0]} == *" "* ]]; then
		COMMAND=(bash -c "${COMMAND[0]}")
	fi
	command -v "${COMMAND[0]}" >/dev/null || die "command not found: ${COMMAND[0]}"
}

wl_settings() { printf '%s\n' "cwd=$PWD"; }
# One untimed run, so that the first timed one does not read the
# command's files from disk alone.
wl_prepare() {
	"${COMMAND[@]}" >"$LAB_DIR/logs/cmd-warmup.txt" 2>&1 ||
		die "the command fails; see $LAB_DIR/logs/cmd-warmup.txt"
}
wl_point_begin() { :; }

wl_run() {
	timed cmd "$LAB_DIR/logs/cmd-$TAG-$REPEAT.txt" "${COMMAND[@]}"
}

wl_finish() { :; }
