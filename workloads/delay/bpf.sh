# shellcheck shell=bash disable=SC2034  # variables for sweep.sh
# The BPF delay (userspace/bpfdelay), the source of a sweep's delay on a
# kernel without the lab's patches (the plan's DELAY=bpf): the names of
# workloads/delay/module.sh, which says what each does.  One loader for
# the whole sweep, a coprocess of the runner under --control: started
# with the settings fixed at load (syscalls, where, every ...) once the
# sweep first needs it, then told each point's ns and the target cgroup
# on its stdin, and asked for its statistics there.  Its stdin ends when
# the runner does, in any way, and the program is detached then.
#
# What it cannot do: the loop-count knob (a BPF program spins in ns),
# refused; a live count of each reply's calls for a server's reference
# client (DELAY_CALLS: no file reads as the program's counter): a server's
# reply time is measured, but has no model; its knee and its CPU have.
BPF_LOADER=$LAB_ROOT/userspace/bpfdelay/bpfdelay
DELAY_CALLS=
BPF_OPTS=()
BPF_NS=0
BPF_CGROUP=
BPF_PID=
BPF_STATS=
BPF_LOG=
# How long a load may take: a verification under TCG takes tens of seconds.
BPF_ATTACH_S=${BPF_ATTACH_S:-600}

# delay_ready NAME...: every NAME is a setting the BPF delay has, and the
# running kernel can take the program (a load that detaches at once).
delay_ready() {
	local name err
	for name in "$@"; do
		case $name in
		loops) die "the BPF delay has no loop count: sweep in ns (lab sweep --ns LIST)" ;;
		ns | cgroup | syscalls | mode | where | every | first | ppm | seed | delays) ;;
		*) die "the BPF delay has no setting $name" ;;
		esac
	done
	[ -x "$BPF_LOADER" ] ||
		die "userspace/bpfdelay/bpfdelay is not built: 'make userspace' (a kernel with BTF; clang, bpftool, libbpf-dev: 'make deps')"
	if ! err=$(timeout "$BPF_ATTACH_S" "$BPF_LOADER" --control </dev/null 2>&1 >/dev/null); then
		die "the BPF delay cannot run on this kernel ($(uname -r)): ${err#bpfdelay: }"
	fi
}

delay_begin() {
	BPF_LOG=$LAB_DIR/logs/bpfdelay.txt
	META_ARGS+=("bpfdelay_attach=tp")
}

# bpf_start: the loader attached with the settings so far.
bpf_start() {
	local waited=0
	BPF_STATS=${SCRATCH:-$LAB_DIR}/bpfdelay
	coproc BPFDELAY {
		exec "$BPF_LOADER" --control --stats "$BPF_STATS" --ns "$BPF_NS" \
			${BPF_CGROUP:+--cgroup "$BPF_CGROUP"} "${BPF_OPTS[@]}" 2>"$BPF_LOG"
	}
	BPF_PID=$BPFDELAY_PID
	until grep -q 'attached' "$BPF_LOG" 2>/dev/null; do
		kill -0 "$BPF_PID" 2>/dev/null ||
			die "the BPF delay refused its settings: $(head -n 1 "$BPF_LOG" 2>/dev/null)"
		[ "$waited" -lt $((BPF_ATTACH_S * 10)) ] ||
			die "the BPF delay did not attach in $BPF_ATTACH_S s; see $BPF_LOG"
		sleep 0.1
		waited=$((waited + 1))
	done
}

# bpf_ask LINE: the loader's one line of answer to LINE, in BPF_ANSWER.
bpf_ask() {
	[ -n "$BPF_PID" ] || bpf_start
	[ -n "${BPFDELAY[1]:-}" ] || die "the BPF delay has ended; see $BPF_LOG"
	printf '%s\n' "$1" >&"${BPFDELAY[1]}"
	IFS= read -r -t "$BPF_ATTACH_S" BPF_ANSWER <&"${BPFDELAY[0]}" ||
		die "the BPF delay did not answer '$1'; see $BPF_LOG"
}

delay_set() {
	case $1 in
	ns | cgroup)
		if [ "$1" = ns ]; then BPF_NS=$2; else BPF_CGROUP=$2; fi
		bpf_ask "$1 $2"
		[ "$BPF_ANSWER" = "ok $1=$2" ] ||
			die "the BPF delay refused $1='$2' (${BPF_ANSWER#error: })"
		;;
	loops) die "the BPF delay has no loop count: sweep in ns (lab sweep --ns LIST)" ;;
	*)
		[ -z "$BPF_PID" ] || die "the BPF delay takes $1 before its first point only"
		BPF_OPTS+=("--$1" "$2")
		;;
	esac
}

delay_settings() {
	local j
	for ((j = 0; j < ${#BPF_OPTS[@]}; j += 2)); do
		echo "${BPF_OPTS[j]#--}=${BPF_OPTS[j + 1]}"
	done
}

delay_stat() {
	[ -n "$BPF_PID" ] || return 0
	bpf_ask stats
	[[ ! $BPF_ANSWER =~ \"$1\":\ ?([0-9]+) ]] || echo "${BASH_REMATCH[1]}"
}

delay_by_call() {
	[ -n "$BPF_PID" ] || return 1
	bpf_ask stats
	cat "$BPF_STATS/stats/by_call" >"$1"
}

# The end of the loader's stdin detaches the program (its final statistics
# in BPF_STATS/stats/).
delay_end() {
	local fd=${BPFDELAY[1]:-}
	[ -n "$BPF_PID" ] || return 0
	[ -z "$fd" ] || exec {fd}>&-
	wait "$BPF_PID" 2>/dev/null || true
	BPF_PID=
}
