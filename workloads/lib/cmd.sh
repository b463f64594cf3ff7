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

wl_settings() { printf '%s\n' "cwd=$PWD" "in_memory=$IN_MEMORY"; }

# --in-memory: the program, its libraries and the dynamic loader copied
# into a tmpfs of its own, and the command run through that loader, told
# to skip /etc/ld.so.cache; the C locale, so that no locale files are read.
MEM_DIR=
in_memory() {
	local prog libs loader=
	prog=$(command -v "${COMMAND[0]}")
	[[ $prog == /* ]] || die "--in-memory needs a program, not the shell's '$prog'"
	MEM_DIR=$(mktemp -d /tmp/lab-sweep-mem.XXXXXX)
	mount -t tmpfs lab-sweep-mem "$MEM_DIR"
	cp "$prog" "$MEM_DIR/"
	# ldd: "name => /path (addr)", or "/path (addr)" for the loader.
	libs=$(ldd "$prog" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }')
	if [ -n "$libs" ]; then
		# shellcheck disable=SC2086  # one path a word
		cp $libs "$MEM_DIR/"
		loader=$(printf '%s\n' "$libs" | grep '/ld-linux' | head -1)
		[ -n "$loader" ] || die "--in-memory: no dynamic loader among ${prog}'s libraries"
		COMMAND=("$MEM_DIR/${loader##*/}" --inhibit-cache --library-path "$MEM_DIR"
			"$MEM_DIR/${prog##*/}" "${COMMAND[@]:1}")
	else
		COMMAND=("$MEM_DIR/${prog##*/}" "${COMMAND[@]:1}")
	fi
	export LC_ALL=C
	log "running ${prog##*/} from $MEM_DIR (tmpfs)"
}

# One untimed run, so that the first timed one does not read the
# command's files from disk alone.
wl_prepare() {
	[ "$IN_MEMORY" -eq 0 ] || in_memory
	"${COMMAND[@]}" >"$LAB_DIR/logs/cmd-warmup.txt" 2>&1 ||
		die "the command fails; see $LAB_DIR/logs/cmd-warmup.txt"
}
wl_point_begin() { :; }

wl_run() {
	timed cmd "$LAB_DIR/logs/cmd-$TAG-$REPEAT.txt" "${COMMAND[@]}"
}

wl_finish() {
	[ -n "$MEM_DIR" ] || return 0
	umount "$MEM_DIR" && rmdir "$MEM_DIR"
	MEM_DIR=
}
