#!/usr/bin/env bash
# On the lab kernel (run.sh boots it, or a machine booted into it): tail
# amplification.  Apache's reference replies (workloads/sweep.sh apache,
# its reqtime client, thousands of requests a point, no saturation search)
# with each of Apache's system calls delayed by D with a chance P, chosen
# by the delay module's seeded draw (ppm=, seed=): one sweep of two points
# (no delay, D) per P, each its own folder in runs/.  run.sh analyses it
# on the host.
#
#   guest.sh [options]
#
# For each fraction P, time N Apache replies with each of Apache's system
# calls delayed by D with a chance P, into
# OUTPUT/tailamp-<date>-<time>/runs/ppm-P/ (a workloads/sweep.sh apache
# folder: the reply times are logs/reply-ns0-1.csv and logs/reply-nsD-1.csv,
# reqtime's CSV, a row a request).
#
#       --ppm LIST        the fractions P in parts per million, in liblab's
#                         list syntax (default 0,1000,3000,10000,30000,100000)
#       --ns D            the delay of a delayed call, 1..5000000 ns
#                         (default 1000000: 1 ms)
#       --mode MODE       spin (default) or sleep: how the delay is spent
#       --seed S          the seed of the module's draw (default 1): the same
#                         calls are delayed in every run on the virtual clock
#   -n, --requests N      replies timed per point (default 5000)
#       --interval-ms MS  one request every MS ms, on the clock's grid
#                         (default 10: a whole number of ticks at any HZ)
#   -o, --output DIR      parent of the result folder (default results)
#   -h, --help            this text
#
# Example:  guest.sh --ppm 0,10000,100000 -n 2000 -o results
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../scripts/lib.sh"
lab_help "$@"

ppm=0,1000,3000,10000,30000,100000 ns=1000000 mode=spin seed=1 n=5000 interval=10
out=$LAB_ROOT/results
args=("$@")
while [ $# -gt 0 ]; do
	case $1 in
	-h | --help) lab_help --help ;;
	--ppm) want_value "$@"; ppm=$2; shift 2 ;;
	--ns) want_value "$@"; ns=$2; shift 2 ;;
	--mode) want_value "$@"; mode=$2; shift 2 ;;
	--seed) want_value "$@"; seed=$2; shift 2 ;;
	-n | --requests) want_value "$@"; n=$2; shift 2 ;;
	--interval-ms) want_value "$@"; interval=$2; shift 2 ;;
	-o | --output) want_value "$@"; out=$2; shift 2 ;;
	*) bad_arg "unknown argument '$1' (see --help)" ;;
	esac
done

list=$(lab_list --ppm "$ppm" 1000000)
read -r -a fractions <<<"$list"
want_uint --ns "$ns" 1
[ "$ns" -le 5000000 ] || bad_arg "--ns wants at most 5000000 (the module's cap), not '$ns'"
case $mode in spin | sleep) ;; *) bad_arg "--mode wants spin or sleep, not '$mode'" ;; esac
want_uint --seed "$seed"
want_uint --requests "$n" 1
want_uint --interval-ms "$interval" 1
lab_built "$LAB_TOOL" "$LAB_ROOT/workloads/reqtime"
lab_root "insmod, cgroups, Apache"

lab_begin "$out" tailamp
"$LAB_TOOL" meta "$LAB_DIR" tailamp "ppm:=[$(IFS=,; echo "${fractions[*]}")]" ns:="$ns" \
	mode="$mode" seed:="$seed" requests:="$n" interval_ms:="$interval" -- "$0" "${args[@]}"
mkdir "$LAB_DIR/runs"
i=0
for p in "${fractions[@]}"; do
	i=$((i + 1))
	log "[$i/${#fractions[@]}] P = $p ppm: $n replies undelayed, then with ${ns} ns ($mode) on that share of Apache's calls"
	# The event MPM, with which the README's figures were measured (a
	# reply: 11.2 calls on average); the sweep's default, prefork, makes 7.
	env APACHE_MPM=event SERVER_REQUESTS="$n" SERVER_INTERVAL_MS="$interval" SERVER_SATURATION=0 \
		"$LAB_VENV/bin/python" -m lablib.sweep.driver apache --here --ns "0,$ns" -r 1 \
		--set "ppm=$p" --set "seed=$seed" --set "mode=$mode" -o "$LAB_DIR/runs" --no-analysis
	lab_take "$LAB_DIR/runs" apache "ppm-$p"
done
lab_commit tailamp
log "results: $LAB_DIR"
