#!/usr/bin/env bash
# The reference grid of the irqhook experiment: 0, 1, 2, 4, 8, 16, 32 load
# tasks x read/write tasks SCHED_OTHER and SCHED_RR, one irqhook run each,
# then a table and a plot of mean and p99 against load tasks.  One cell is
# also recorded with trace-cmd and its slow events explained.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

usage() {
	cat <<EOT
usage: irqhook-sweep.sh [options]

  -n N          events per run (default 2000; the reference used 10000)
  -p US         write period in us (default 16000)
  -l LIST       load task counts (default "0 1 2 4 8 16 32")
  -t CELLS      also trace these cells, "LOADS:normal|rt ..." (default
                "0:normal 16:normal"; "none": no trace), -n min(N, 300) each
  -A            record only; leave the table and the trace analysis to the
                caller (make irqhook-sweep runs them on the host, where
                Python is not emulated)
  -c CPU        run every task on this CPU, like the reference's uniprocessor
                board (default 0; "none" leaves placement to the scheduler)
  -o DIR        output folder (default results/irqhook-sweep-<timestamp>)
  -h            this text

Example:  irqhook-sweep.sh -n 10000 -o results/irqhook-ref
EOT
}

n=2000 period=16000 loads="0 1 2 4 8 16 32" trace_cells="0:normal 16:normal" out='' cpu=0
analyse=1
while getopts "n:p:l:t:c:o:Ah" o; do
	case $o in
	n) n=$OPTARG ;;
	p) period=$OPTARG ;;
	l) loads=$OPTARG ;;
	t) trace_cells=$OPTARG ;;
	A) analyse=0 ;;
	c) cpu=$OPTARG ;;
	o) out=$OPTARG ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || { echo "irqhook-sweep: unexpected argument '$1'" >&2; exit 2; }
place=()
[ "$cpu" = none ] || place=(--read-cpu "$cpu" --write-cpu "$cpu" --load-cpus "$cpu")
for v in "$n" "$period" $loads ${place[@]:+"$cpu"}; do
	case $v in '' | *[!0-9]*) echo "irqhook-sweep: '$v' is not a whole number" >&2; exit 2 ;; esac
done
[ "$trace_cells" = none ] && trace_cells=
for c in $trace_cells; do
	[[ $c =~ ^[0-9]+:(normal|rt)$ ]] ||
		{ echo "irqhook-sweep: -t wants LOADS:normal or LOADS:rt, not '$c'" >&2; exit 2; }
done
[ -x "$here/irqhook" ] || { echo "irqhook-sweep: $here/irqhook is not built (make userspace)" >&2; exit 1; }
[ -e /dev/irqhook ] || { echo "irqhook-sweep: no /dev/irqhook: boot the lab kernel (make vm)" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "irqhook-sweep: must run as root" >&2; exit 1; }

out=${out:-$root/results/irqhook-sweep-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
export LAB_PYTHON=${LAB_PYTHON:-$root/.venv/bin/python}
export MPLCONFIGDIR=${MPLCONFIGDIR:-$root/build/matplotlib}

cells=0
for l in $loads; do cells=$((cells + 2)); done
i=0 start=$(date +%s)
for class in normal rt; do
	for l in $loads; do
		i=$((i + 1))
		flag=()
		[ "$class" = rt ] && flag=(--rt)
		elapsed=$(($(date +%s) - start))
		eta=$((i > 1 ? elapsed * (cells - i + 1) / (i - 1) : 0))
		echo "irqhook-sweep: [$i/$cells] $l load tasks, $class (${elapsed} s elapsed, ~${eta} s left)" >&2
		"$here/irqhook" -q --no-plot -n "$n" -p "$period" -l "$l" "${flag[@]}" "${place[@]}" \
			-o "$out/$l-$class" >"$out/$l-$class.log"
	done
done

tn=$((n < 300 ? n : 300))
for c in $trace_cells; do
	l=${c%%:*} class=${c#*:}
	flag=()
	[ "$class" = rt ] && flag=(--rt)
	echo "irqhook-sweep: tracing $l load tasks, $class ($tn events)" >&2
	"$here/irqhook" -q -t -n "$tn" -p "$period" -l "$l" "${flag[@]}" "${place[@]}" \
		-o "$out/traced-$l-$class" >"$out/traced-$l-$class.log"
done

if [ "$analyse" -eq 1 ]; then
	for c in $trace_cells; do
		"$LAB_PYTHON" "$root/userspace/analysis/irqhook_trace.py" "$out/traced-${c%%:*}-${c#*:}"
	done
	"$LAB_PYTHON" "$root/userspace/analysis/irqhook_sweep.py" "$out"
fi
echo "irqhook-sweep: results in $out" >&2
