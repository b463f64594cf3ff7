#!/usr/bin/env bash
# In the guest, for bench-hook.sh: print "case round ns_per_call" lines.
#   guest-bench-hook.sh a ROUNDS     on the kernel without the hook
#   guest-bench-hook.sh bcd ROUNDS   on the lab kernel: no module, loops=0, 1
set -euo pipefail
. "$(dirname "$0")/lib.sh"

which=${1:?case: a or bcd}
rounds=${2:-5}
nullcall=$LAB_ROOT/userspace/calibrate/nullcall
# Many short batches on CPU 0, as calibrate does (see guest-calibrate.sh).
measure() { taskset -c 0 "$nullcall" getppid 1000 301; }

if [ "$which" = a ]; then
	for r in $(seq "$rounds"); do echo "a $r $(measure)"; done
	exit 0
fi
[ ! -d /sys/module/delay ] || rmmod delay
for r in $(seq "$rounds"); do
	echo "b $r $(measure)"
	insmod "$LAB_ROOT/modules/delay/delay.ko" loops=0
	echo "c $r $(measure)"
	echo 1 >/sys/module/delay/parameters/loops
	echo "d $r $(measure)"
	rmmod delay
done
