# shellcheck shell=bash disable=SC2034  # variables for sweep.sh
# No delay and no counter (the plan's DELAY=none): the workload timed with
# nothing attached to its system calls, at ns 0 alone, raw.csv's syscalls
# 0.  The tax on the running kernel times its workloads so (lablib.tax.
# here_workloads): even at 0 ns the BPF delay sends every call down the
# kernel's slow entry, which is part of what several taxes cost.  The
# calls a unit of work come from a sweep through a delay that counts them.
# The names are those of workloads/delay/module.sh.
DELAY_CALLS=

delay_ready() {
	[ "$KNOB" = ns ] || die "--delay none delays nothing: give --ns 0"
}

delay_begin() { META_ARGS+=("delay_counts:=false"); }

delay_set() {
	case $1 in
	ns) [ "$2" = 0 ] || die "--delay none delays nothing: it cannot set ns=$2" ;;
	cgroup) ;;
	*) die "--delay none has no $1 to set" ;;
	esac
}

delay_settings() { :; }
delay_stat() { :; }
delay_by_call() { return 1; }
delay_end() { :; }
