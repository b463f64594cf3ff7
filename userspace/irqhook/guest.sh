#!/usr/bin/env bash
# On the lab kernel (run.sh boots it, or a machine booted into it): the
# reference grid of the irqhook experiment, 0, 1, 2, 4, 8, 16, 32 load
# tasks x read/write tasks SCHED_OTHER and SCHED_RR, one irqhook run each;
# some cells also recorded with trace-cmd.  run.sh then analyses it on the
# host, where Python is not emulated.
#
#   guest.sh [options]
#
# Run irqhook once per cell of the grid (load tasks x normal/rt) into
# OUTPUT/irqhook-sweep-<date>-<time>/<loads>-<class>/ and trace some cells
# (run.sh boots the VM with these options and analyses the folder).
#
#   -n, --events N        events per run (default 2000; the reference used 10000)
#       --period-us US    write period in us (default 16000)
#       --loads LIST      load task counts (default 0,1,2,4,8,16,32)
#       --trace-cells L   also trace these cells, LOADS:normal|rt, comma-separated
#                         (default 0:normal,16:normal; 'none': no trace),
#                         min(N, 300) events each
#   -C, --cpu CPU         run every task on this CPU, like the reference's
#                         uniprocessor board (default 0; 'none' leaves placement
#                         to the scheduler)
#   -o, --output DIR      parent of the result folder (default results)
#   -h, --help            this text
#
# Example:  guest.sh -n 10000 --loads 0,8,16 -o results
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../scripts/lib.sh"
lab_help "$@"

n=2000 period=16000 loads=0,1,2,4,8,16,32 trace_cells=0:normal,16:normal cpu=0
out=$LAB_ROOT/results
args=("$@")
while [ $# -gt 0 ]; do
	case $1 in
	-h | --help) lab_help --help ;;
	-n | --events) want_value "$@"; n=$2; shift 2 ;;
	--period-us) want_value "$@"; period=$2; shift 2 ;;
	--loads) want_value "$@"; loads=$2; shift 2 ;;
	--trace-cells) want_value "$@"; trace_cells=$2; shift 2 ;;
	-C | --cpu) want_value "$@"; cpu=$2; shift 2 ;;
	-o | --output) want_value "$@"; out=$2; shift 2 ;;
	*) bad_arg "unknown argument '$1' (see --help)" ;;
	esac
done

load_list=$(lab_list --loads "$loads" 1024)
want_uint --events "$n" 1
want_uint --period-us "$period"
place=()
if [ "$cpu" != none ]; then
	if ! [[ $cpu =~ ^[0-9]+$ ]] || [ ! -d "/sys/devices/system/cpu/cpu$cpu" ]; then
		bad_arg "--cpu wants a CPU of this machine or 'none', not '$cpu'"
	fi
	place=(--read-cpu "$cpu" --write-cpu "$cpu" --load-cpus "$cpu")
fi
[ "$trace_cells" = none ] && trace_cells=
IFS=, read -r -a cells_traced <<<"$trace_cells"
for c in "${cells_traced[@]}"; do
	[[ $c =~ ^[0-9]+:(normal|rt)$ ]] || bad_arg "--trace-cells wants LOADS:normal or LOADS:rt, not '$c'"
done
lab_built "$LAB_TOOL" "$here/irqhook"
[ -e /dev/irqhook ] || die "no /dev/irqhook: boot the lab kernel (make vm)"
[ "$(id -u)" -eq 0 ] || die "must run as root"

lab_begin "$out" irqhook-sweep
"$LAB_TOOL" meta "$LAB_DIR" irqhook-sweep events:="$n" period_us:="$period" \
	loads:="[${load_list// /,}]" cpu="$cpu" \
	trace_cells:="[$(printf '"%s",' "${cells_traced[@]}" | sed 's/,$//')]" -- "$0" "${args[@]}"

ncells=0
for l in $load_list; do ncells=$((ncells + 2)); done
i=0 start=$SECONDS
for class in normal rt; do
	for l in $load_list; do
		i=$((i + 1))
		flag=()
		[ "$class" = rt ] && flag=(--rt)
		elapsed=$((SECONDS - start))
		eta=$((i > 1 ? elapsed * (ncells - i + 1) / (i - 1) : 0))
		log "[$i/$ncells] $l load tasks, $class (${elapsed} s elapsed, ~${eta} s left)"
		"$here/irqhook" -q -n "$n" --period-us "$period" --loads "$l" "${flag[@]}" \
			"${place[@]}" -o "$LAB_DIR" --name "$l-$class" >"$LAB_DIR/$l-$class.log"
	done
done

tn=$((n < 300 ? n : 300))
for c in "${cells_traced[@]}"; do
	l=${c%%:*} class=${c#*:}
	flag=()
	[ "$class" = rt ] && flag=(--rt)
	log "tracing $l load tasks, $class ($tn events)"
	"$here/irqhook" -q --trace -n "$tn" --period-us "$period" --loads "$l" "${flag[@]}" \
		"${place[@]}" -o "$LAB_DIR" --name "traced-$l-$class" >"$LAB_DIR/traced-$l-$class.log"
done

lab_commit irqhook-sweep
log "results in $LAB_DIR"
