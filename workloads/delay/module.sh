# shellcheck shell=bash disable=SC2034  # variables for sweep.sh
# The delay module of the lab kernel (modules/delay), one source of a
# sweep's delay (the plan's DELAY=module).  Each source defines the same
# names, which the guest's runner (sweep.sh) and common.sh use alone:
#   delay_ready           the kernel and the delay can run here, or die
#   delay_begin           load it if it is not, nothing delayed yet; what it
#                         was set to kept for delay_end, and said in
#                         META_ARGS
#   delay_set NAME VALUE  one setting: loops, ns, cgroup, syscalls and the
#                         module's others (--set); dies if refused, with why
#   delay_settings        NAME=VALUE of the other settings in force, a line
#                         each (meta.json's delay_settings)
#   delay_stat NAME       a counter: calls, delayed, spun_ns ('' if none)
#   DELAY_CALLS           a file that reads as the calls counter now (the
#                         reference client reads it at its own instants)
#   delay_by_call FILE    the calls by number now, stats/by_call's binary
#                         array, into FILE; status 1 if it counts none
#   delay_end             put back what delay_begin and delay_set changed
#                         and unload what delay_begin loaded
DELAY_DIR=/sys/module/delay
DELAY_CALLS=$DELAY_DIR/stats/calls
DELAY_OTHERS=(mode where every first ppm seed delays)
DELAY_LOADED=0
DELAY_KO=

# Does the module (loaded, or the one that would be) have parameter $1?
delay_has() {
	if [ -d "$DELAY_DIR" ]; then
		[ -e "$DELAY_DIR/parameters/$1" ]
	else
		modinfo -p "$DELAY_KO" 2>/dev/null | grep -q "^$1:"
	fi
}

# delay_ready NAME...: the module's parameters NAME... exist too.
delay_ready() {
	local name
	grep -q ' syscall_hook_register$' /proc/kallsyms ||
		die "this kernel ($(uname -r)) has no syscall hook; boot the lab kernel ('make vm')"
	[ -d "$DELAY_DIR" ] || DELAY_KO=$(lab_ko delay)
	for name in cgroup "$@"; do
		delay_has "$name" ||
			die "this delay module has no $name parameter; rebuild it ('make module'), or rmmod the loaded one"
	done
}

delay_begin() {
	if [ ! -d "$DELAY_DIR" ]; then
		insmod "$DELAY_KO"
		DELAY_LOADED=1
	fi
	# Of loops and ns, writing one clears the other: the one in force is
	# kept first, so that it is written back last.
	local ns=$DELAY_DIR/parameters/ns
	[ ! -e "$ns" ] || [ "$(cat "$ns")" = 0 ] || save_setting "$ns"
	save_setting "$DELAY_DIR/parameters/loops"
	[ ! -e "$ns" ] || save_setting "$ns"
	META_ARGS+=("module_loops_before:=$(cat "$DELAY_DIR/parameters/loops")"
		"module_cgroup_before=$(cat "$DELAY_DIR/parameters/cgroup")")
	delay_set loops 0
	delay_set cgroup ""
}

# Not in a subshell: set_setting records what to put back.
delay_set() {
	local why err=${SCRATCH:-/tmp}/delay-set.err
	if ! set_setting "$DELAY_DIR/parameters/$1" "$2" 2>"$err"; then
		why=$(cat "$err")
		why=${why##*: }
		rm -f "$err"
		die "the delay module refused $1='$2'${why:+ ($why)}"
	fi
	rm -f "$err"
}

delay_settings() {
	local name
	for name in "${DELAY_OTHERS[@]}"; do
		[ ! -e "$DELAY_DIR/parameters/$name" ] ||
			echo "$name=$(cat "$DELAY_DIR/parameters/$name")"
	done
}

delay_stat() { [ ! -e "$DELAY_DIR/stats/$1" ] || cat "$DELAY_DIR/stats/$1"; }

delay_by_call() {
	[ -e "$DELAY_DIR/stats/by_call" ] || return 1
	cat "$DELAY_DIR/stats/by_call" >"$1"
}

delay_end() {
	[ "$DELAY_LOADED" -eq 0 ] || forget_settings "$DELAY_DIR/"
	restore_settings
	if [ "$DELAY_LOADED" -eq 1 ] && [ -d "$DELAY_DIR" ]; then
		rmmod delay || log "warning: could not unload the delay module"
	fi
	DELAY_LOADED=0
}
