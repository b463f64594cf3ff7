# shellcheck shell=bash
# Common paths and helpers for the lab's shell scripts.  Sourced, not run.

LAB_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Everything worth keeping between clones (ccache, pip cache, the KVM
# probe's verdict) lives outside the repository.
LAB_CACHE=${LAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kernel-lab}
LAB_BUILD=${LAB_BUILD:-$LAB_ROOT/build}
# The kernel variant (config/variants/VARIANT.config) and its object tree
# (make O=...): build/obj for stock, build/obj-VARIANT for the others.  They
# share the unpacked, patched source and ccache.
VARIANT=${VARIANT:-stock}
kobj_of() {
	if [ "$1" = stock ]; then
		printf '%s\n' "$LAB_BUILD/obj"
	else
		printf '%s\n' "$LAB_BUILD/obj-$1"
	fi
}
KOBJ=${KOBJ:-$(kobj_of "$VARIANT")}
# check_variant NAME [OPTION]: NAME is a kernel variant, or the script stops
# with status 2 (a bad value of OPTION, VARIANT by default).
check_variant() {
	[ -f "$LAB_ROOT/config/variants/$1.config" ] ||
		bad_arg "${2:-VARIANT} wants a kernel variant of config/variants ($(find \
			"$LAB_ROOT/config/variants" -name '*.config' -printf '%f\n' |
			sed 's/\.config$//' | sort | paste -sd, -)), not '$1'"
}

# The lab's modules built for the running kernel (make module puts them in
# build/modules/<kernel release>/), by name: lab_ko delay.
# On a machine that installed a lab kernel's package (make deb), they are
# in /lib/modules/<release>/extra/ instead.
lab_ko() {
	local ko
	ko=$LAB_BUILD/modules/$(uname -r)/$1.ko
	[ -f "$ko" ] || ko=/lib/modules/$(uname -r)/extra/$1.ko
	[ -f "$ko" ] || die "$1.ko is not built for this kernel ($(uname -r)); run 'make module VARIANT=...'"
	printf '%s\n' "$ko"
}
# liblab's helper for shell scripts (lists, result folders, meta.json).
# shellcheck disable=SC2034  # used by the scripts that source this file
LAB_TOOL=$LAB_ROOT/userspace/lib/lab
LAB_VENV=${LAB_VENV:-$LAB_ROOT/.venv}
# matplotlib wants a writable cache; in the VM only the repository is.
export MPLCONFIGDIR=${MPLCONFIGDIR:-$LAB_BUILD/matplotlib}

log() { printf '%s: %s\n' "${0##*/}" "$*" >&2; }

# lab_help "$@": with -h or --help first, print the calling script's header
# comment (its usage, with an example) and exit.
lab_help() {
	case ${1:-} in
	-h | --help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
	esac
}
# The README's two failures, one line each: die for a missing tool, module,
# device or file (status 1), bad_arg for a bad option or value (status 2,
# before anything is made).
# sh_quote ARG...: ARGs as one command line for any POSIX shell (dash has
# no $'...', which bash's printf %q writes for a newline or a tab): each in
# single quotes, a ' inside written '\''.
sh_quote() {
	local arg out=
	for arg in "$@"; do
		out+="'${arg//\'/\'\\\'\'}' "
	done
	printf '%s\n' "${out% }"
}

die() {
	lab_stopping && exit 1
	printf '%s: error: %s\n' "${0##*/}" "$*" >&2
	exit 1
}
bad_arg() { printf '%s: %s\n' "${0##*/}" "$*" >&2; exit 2; }
# In an option loop, before taking the value of the option in $1 from $2:
#   -r) want_value "$@"; RUNS=$2; shift ;;
want_value() {
	if [ $# -lt 2 ] || [ -z "$2" ]; then bad_arg "$1 wants a value (see --help)"; fi
}
# lab_root WHY: the script runs as root, or it stops saying it needs root
# for WHY (status 1).
lab_root() {
	[ "$(id -u)" -eq 0 ] || die "needs root ($1)"
}
# lab_built PROGRAM...: each is built, or the script stops saying how to.
#   lab_built "$LAB_TOOL" "$here/smp"
lab_built() {
	local p
	for p in "$@"; do
		[ -x "$p" ] || die "${p#"$LAB_ROOT"/} is not built; run 'make userspace'"
	done
}
# A runner's result folder.  lab_begin PARENT EXPERIMENT makes
# PARENT/EXPERIMENT-<date>-<time>.incomplete/ and sets LAB_DIR to it; until
# lab_commit EXPERIMENT gives it its final name (and LAB_DIR with it), a
# runner that stops says where what it measured is.
lab_begin() {
	LAB_DIR=$("$LAB_TOOL" begin "$1" "$2")
	trap 'log "stopped; what was measured is in $LAB_DIR"' EXIT
}
lab_commit() {
	trap - EXIT
	LAB_DIR=$("$LAB_TOOL" commit "$LAB_DIR" "$1")
}
# For a runner whose guest script makes its own result folder (a tool
# that takes -o PARENT and --name NAME, and points PARENT/latest-EXPERIMENT
# at it): lab_option_value SHORT LONG DEFAULT ARG... is the value the last
# SHORT or LONG among ARGs gives (DEFAULT if none; '' for no SHORT), and
# lab_latest PARENT EXPERIMENT the folder the link names (empty if none).
#   parent=$(lab_option_value -o --output "$LAB_ROOT/results" "${LAB_REST[@]}")
lab_option_value() {
	local short=$1 long=$2 value=$3
	shift 3
	while [ $# -gt 0 ]; do
		case $1 in
		"$long"=*) value=${1#*=} ;;
		"$long" | "${short:-$long}") value=${2:-}; [ $# -eq 1 ] || shift ;;
		esac
		shift
	done
	printf '%s\n' "$value"
}
lab_latest() {
	local link
	link=$(readlink "$1/latest-$2" 2>/dev/null) || return 0
	printf '%s/%s\n' "$1" "$link"
}
# lab_guest_named true|false EXPERIMENT GUEST ARG...: lab_guest for a guest
# script that makes its own result folder (-o PARENT --name NAME, else
# PARENT/latest-EXPERIMENT): the guest is given the parent of ARGs (the
# last -o or --output, default results/) as an absolute path, last, so
# that its folder is found here whatever the guest's working directory;
# LAB_DIR is then that folder.
lab_guest_named() {
	local vm=$1 exp=$2 guest=$3 parent name before
	shift 3
	parent=$(lab_option_value -o --output "$LAB_ROOT/results" "$@")
	[ -n "$parent" ] || bad_arg "-o wants a value (see --help)"
	parent=$(realpath -m "$parent")
	name=$(lab_option_value '' --name '' "$@")
	mkdir -p "$parent"
	before=$(lab_latest "$parent" "$exp")
	lab_guest "$vm" "$guest" "$@" -o "$parent"
	if [ -n "$name" ]; then
		LAB_DIR=$parent/$name
	else
		LAB_DIR=$(lab_latest "$parent" "$exp")
	fi
	if [ ! -d "$LAB_DIR" ] || [ "$LAB_DIR" = "$before" ]; then
		die "${guest#"$LAB_ROOT"/} left no new result folder in $parent"
	fi
}
# lab_take PARENT EXPERIMENT NAME: the folder PARENT/latest-EXPERIMENT
# names, renamed PARENT/NAME (the link goes): where a suite keeps what it
# ran through another experiment's runner.
lab_take() {
	local dir
	dir=$(lab_latest "$1" "$2")
	[ -n "$dir" ] || die "no $1/latest-$2 to take"
	mv -T "$dir" "$1/$3"
	rm "$1/latest-$2"
}
# lab_guest true|false COMMAND...: run a runner's guest script in the lab
# kernel's VM (scripts/vm.sh: VARIANT, VM_CPUS ...), or, for false (the
# runner's --here), on the kernel this machine runs.
lab_guest() {
	local vm=$1
	shift
	if [ "$vm" = true ]; then
		log "booting the ${VARIANT:-stock} kernel${LAB_DIR:+: $LAB_DIR}"
		"$LAB_ROOT/scripts/vm.sh" -- "$@"
	else
		log "measuring the running kernel $(uname -r)${LAB_DIR:+: $LAB_DIR}"
		"$@"
	fi
}
# The workloads' declarations (workloads/catalog.py says how): wl_files,
# the files that declare one (WL_ABOUT), those of workloads/lib/ then of
# LAB_WORKLOADS_DIR's folders (colon-separated), one a line; wl_declared
# NAME FILE, the value FILE declares for NAME (empty if none).
wl_files() {
	local dirs dir f
	IFS=: read -r -a dirs <<<"${LAB_WORKLOADS_DIR:-}"
	for dir in "$LAB_ROOT/workloads/lib" "${dirs[@]}"; do
		for f in "$dir"/*.sh; do
			! grep -qs '^WL_ABOUT=' "$f" || printf '%s\n' "$f"
		done
	done
}
wl_declared() { sed -n "s/^$1=\"\{0,1\}\([^\"]*\)\"\{0,1\}\$/\1/p" "$2"; }
# lab_python ARG...: the lab's Python, the project virtualenv's, where
# lablib is installed (make venv).
lab_python() {
	local py=$LAB_VENV/bin/python
	[ -x "$py" ] || die "no $py: the analysers need the project's virtualenv (make venv)"
	"$py" "$@"
}
# lab_analyse 1|0: analyse LAB_DIR ('lab analyse', the analyser its
# meta.json names), or, for 0 (a runner's --no-analysis), say how to later.
lab_analyse() {
	if [ "$1" -eq 1 ]; then
		lab_python -m lablib.lab analyse "$LAB_DIR"
	else
		log "analyse with: lab analyse $LAB_DIR"
	fi
}
# lab_debugfs: mount debugfs on /sys/kernel/debug where it is not (the VM
# does not mount it); nonzero if it is still not there, which a caller that
# can do without it ignores.
lab_debugfs() {
	grep -qs ' /sys/kernel/debug debugfs ' /proc/mounts ||
		mount -t debugfs none /sys/kernel/debug 2>/dev/null
}
# lab_skip CSV WHAT... REASON: say that WHAT is not measured and why, and
# append the row WHAT...,"REASON" to CSV (its header is the caller's).
# Example:  lab_skip "$dir/skipped.csv" perf-bench "perf is not installed"
lab_skip() {
	local csv=$1 reason=${*: -1}
	local what=("${@:2:$#-2}")
	if [ ${#what[@]} -gt 1 ]; then
		log "skipping ${what[0]} (${what[*]:1}): $reason"
	else
		log "skipping ${what[0]}: $reason"
	fi
	printf '%s,"%s"\n' "$(IFS=,; printf '%s' "${what[*]}")" "${reason//\"/\'}" >>"$csv"
}

# QEMU's major version, empty if qemu-system-x86_64 is missing.  Version 8
# is the first whose multi-threaded TCG the lab trusts (see scripts/vm.sh).
# shellcheck disable=SC2034  # read by deps.sh and vm.sh
QEMU_TRUSTED_MAJOR=8
# Never fails, so that a caller under 'set -e -o pipefail' on a machine
# without QEMU goes on to install it instead of dying without a word.
qemu_major() {
	command -v qemu-system-x86_64 >/dev/null 2>&1 || return 0
	{ qemu-system-x86_64 --version 2>/dev/null || true; } |
		sed -n 's/.*version \([0-9]*\)\..*/\1/p'
}

# Run a command as root, or explain why we cannot.
as_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		die "need root for: $*"
	fi
}

# want_uint OPTION VALUE [MIN]: VALUE is a whole number >= MIN (default 0),
# or the script stops with status 2.
want_uint() {
	case $2 in
	'' | *[!0-9]*) bad_arg "$1 wants a whole number, not '$2'" ;;
	esac
	if [ "${#2}" -gt 18 ] || [ "$((10#$2))" -lt "${3:-0}" ]; then
		bad_arg "$1 wants a whole number >= ${3:-0}, not '$2'"
	fi
}

# lab_env_uint NAME DEFAULT MIN...: for each NAME (an environment setting
# of a runner, such as RUNS or BOOTS), NAME=${NAME:-DEFAULT}, a whole
# number >= MIN, or the script stops with status 2.
#   lab_env_uint RUNS 5 2  BOOTS 2 1
lab_env_uint() {
	while [ $# -ge 3 ]; do
		printf -v "$1" '%s' "${!1:-$2}"
		want_uint "$1" "${!1}" "$3"
		shift 3
	done
}

# lab_runner_args SPEC "$@": the option loop every run.sh shares, -h and
# --help first included (lab_help).  SPEC lists the options the runner
# takes, of:
#   -r=DEFAULT        -r, --repeats RUNS   (a whole number >= 1)
#   -n=DEFAULT        -n N                 (>= 1)
#   --warmup=DEFAULT  --warmup WARMUP      (>= 0)
#   --here            vm=false: no VM, measure the running kernel
#   -o                -o, --output PARENT  (LAB_PARENT: where the result
#                     folder goes, absolute; default results/)
#   --no-analysis     analysis=0: record only
#   --                what follows goes to LAB_REST (else it is an unknown
#                     argument)
#   ...               any other argument goes to LAB_REST too, in its place:
#                     a runner whose guest script takes the options (the
#                     guest script checks them)
# RUNS, N and WARMUP start from the environment, else from DEFAULT; vm=true
# and analysis=1 unless given.  Any other argument, a missing or bad value:
# status 2.  LAB_ARGS is the whole command line, for meta.json.
#   lab_runner_args '-r=5 -n=500 --here --no-analysis' "$@"
# shellcheck disable=SC2034  # vm, analysis, LAB_ARGS, LAB_PARENT and LAB_REST are the caller's
lab_runner_args() {
	local spec=" $1 " opt
	shift
	lab_help "$@"
	LAB_ARGS=("$@") LAB_REST=()
	vm=true analysis=1 LAB_PARENT=$LAB_ROOT/results
	[[ $spec != *" -r="* ]] || { opt=${spec#* -r=}; RUNS=${RUNS:-${opt%% *}}; }
	[[ $spec != *" -n="* ]] || { opt=${spec#* -n=}; N=${N:-${opt%% *}}; }
	[[ $spec != *" --warmup="* ]] || { opt=${spec#* --warmup=}; WARMUP=${WARMUP:-${opt%% *}}; }
	spec=$(printf '%s' "$spec" | sed 's/=[0-9]*//g')
	while [ $# -gt 0 ]; do
		opt=$1
		[ "$opt" = --repeats ] && opt=-r
		[ "$opt" = --output ] && opt=-o
		if [[ $spec != *" $opt "* ]]; then
			[[ $spec == *" ... "* ]] || bad_arg "unknown argument '$1' (see --help)"
			LAB_REST+=("$1")
			shift
			continue
		fi
		case $opt in
		-r) want_value "$@"; RUNS=$2; shift ;;
		-n) want_value "$@"; N=$2; shift ;;
		--warmup) want_value "$@"; WARMUP=$2; shift ;;
		-o) want_value "$@"; LAB_PARENT=$(realpath -m "$2"); shift ;;
		--here) vm=false ;;
		--no-analysis) analysis=0 ;;
		--) shift; LAB_REST+=("$@"); break ;;
		esac
		shift
	done
	[[ $spec != *" -r "* ]] || want_uint --repeats "$RUNS" 1
	[[ $spec != *" -n "* ]] || want_uint -n "$N" 1
	[[ $spec != *" --warmup "* ]] || want_uint --warmup "$WARMUP"
}

# lab_guest_args SPEC "$@": a guest.sh's arguments, DIR [A [B ...]]: DIR,
# the result folder run.sh made, into dir; then each NAME=DEFAULT:MIN of
# SPEC in turn into NAME, a whole number >= MIN; what follows into LAB_REST
# if SPEC ends in a WORDS... that says what they are.  Too few or too many arguments or a bad value:
# status 2; no folder DIR: status 1.
# Also -h and --help first (lab_help).
#   lab_guest_args 'RUNS=5:1 N=500:1' "$@"    # guest.sh DIR [RUNS [N]]
# shellcheck disable=SC2034  # dir and LAB_REST are the caller's
lab_guest_args() {
	local -a specs
	local usage=DIR close='' more='' s name i
	read -r -a specs <<<"$1"
	shift
	lab_help "$@"
	if [[ ${specs[-1]:-} == *... ]]; then
		more=${specs[-1]}
		unset 'specs[-1]'
	fi
	for s in "${specs[@]}"; do
		name=${s%%=*}
		usage+=" [$name" close+="]"
	done
	usage+=${more:+ [$more]}$close
	if [ $# -lt 1 ] || { [ -z "$more" ] && [ $# -gt $((${#specs[@]} + 1)) ]; }; then
		bad_arg "usage: ${0##*/} $usage"
	fi
	dir=$1
	shift
	for i in "${!specs[@]}"; do
		s=${specs[$i]} name=${specs[$i]%%=*}
		s=${s#*=}
		printf -v "$name" '%s' "${1:-${s%%:*}}"
		want_uint "$name" "${!name}" "${s#*:}"
		[ $# -eq 0 ] || shift
	done
	LAB_REST=("$@")
	[ -d "$dir" ] || die "no result folder $dir (run.sh makes it)"
}

# lab_list OPTION LIST [MAX]: the numbers of LIST ('0,50,100', '0:700:50' or a
# mix, liblab's one syntax) separated by spaces, or the script stops with
# status 2 (under set -e, also from inside  list=$(lab_list ...)).
lab_list() {
	local out
	lab_built "$LAB_TOOL"
	out=$("$LAB_TOOL" list "$2" ${3:+"$3"} 2>&1) ||
		bad_arg "$1 wants a list like '0,50,100', '0:700:50' or a mix${3:+ (at most $3)}, not '$2'"
	printf '%s\n' "$out" | paste -sd' '
}

# --- Stopping a long runner on a signal ------------------------------------
# bash 5.2 may lose a trapped SIGINT that arrives while it expands a command
# substitution, or fail to parse the trap ("interrupt trap: line 2:
# unexpected EOF while looking for matching ')'") and exit 2, when a signal
# arrives between two substitutions of one word.  A runner does little else
# between its measurements, so it cannot trap signals itself.
#
# lab_supervise "$@" (once the arguments are checked) makes the rest of the
# script a worker: the same script run again in a process group of its own,
# which no Ctrl-C reaches and which traps nothing.  This process only waits
# for it.  On SIGINT or SIGTERM it creates the file LAB_STOP and sends
# SIGTERM to the worker's children; the worker sees their failure, and dies
# quietly (die) or stops where it looks (lab_stopping), and its EXIT trap puts
# everything back.  This process then exits 130 or 143.  A second signal
# changes nothing: the worker's cleaning up must not be cut short.
lab_stopping() { [ -n "${LAB_STOP:-}" ] && [ -e "$LAB_STOP" ]; }

lab_supervise() {
	if [ -n "${LAB_STOP:-}" ]; then
		# The worker; asked to stop before it began, it does not begin.
		! lab_stopping || exit 1
		return 0
	fi
	LAB_STOP=${TMPDIR:-/tmp}/lab-stop.$$
	export LAB_STOP
	rm -f "$LAB_STOP"
	# The traps first: a signal between the worker's start and them would
	# end this process and leave the worker running on its own.
	LAB_WORKER=
	LAB_ASKED=0
	trap 'lab_stop_worker 130 interrupted' INT
	trap 'lab_stop_worker 143 terminated' TERM
	# An explicit stdin: an asynchronous command's would be /dev/null.
	setsid "$0" "$@" 0<&0 &
	LAB_WORKER=$!
	# A signal that came before $! was known: its children now.
	[ "$LAB_ASKED" -eq 0 ] || lab_signal_group TERM "$LAB_WORKER"
	local status
	# wait also returns, with a status above 128, when a trap has run.
	while :; do
		status=0
		wait "$LAB_WORKER" || status=$?
		if [ "$status" -le 128 ] || ! kill -0 "$LAB_WORKER" 2>/dev/null; then
			break
		fi
	done
	rm -f "$LAB_STOP"
	[ "$LAB_ASKED" -eq 0 ] || exit "$LAB_ASKED"
	exit "$status"
}

lab_stop_worker() {
	if [ "$LAB_ASKED" -ne 0 ]; then
		log "$2 again; still putting things back"
		return
	fi
	LAB_ASKED=$1
	log "$2; stopping"
	: >"$LAB_STOP"
	[ -z "$LAB_WORKER" ] || lab_signal_group TERM "$LAB_WORKER"
}

# lab_signal_group SIGNAL PGID: signal the processes of a process group, all
# but its leader.  From /proc: procps is not on every machine.
lab_signal_group() {
	local stat line pid rest pgrp
	for stat in /proc/[0-9]*/stat; do
		read -r line 2>/dev/null <"$stat" || continue
		pid=${line%% *}
		rest=${line##*) }
		read -r _ _ pgrp _ <<<"$rest"
		if [ "$pgrp" = "$2" ] && [ "$pid" != "$2" ]; then
			kill -s "$1" "$pid" 2>/dev/null || true
		fi
	done
}
