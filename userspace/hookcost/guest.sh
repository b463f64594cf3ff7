#!/usr/bin/env bash
# In the guest, for run.sh: append "case,boot,round,ns_per_call" rows to
# DIR/raw.csv and this boot's meta.json to DIR/boots/.
#   guest.sh a ROUNDS BOOT DIR     on the nohook kernel
#   guest.sh bcd ROUNDS BOOT DIR   on the lab kernel: no module, loops=0, 1
#
# Example (in the guest):  guest.sh bcd 5 1 results/hookcost-20261122-101010.incomplete
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../scripts/lib.sh"
lab_help "$@"

[ $# -eq 4 ] || bad_arg "usage: guest.sh a|bcd ROUNDS BOOT DIR"
which=$1 rounds=$2 boot=$3 dir=$4
nullcall=$LAB_ROOT/userspace/calibrate/nullcall
# Many short batches on CPU 0, as calibrate does (see userspace/calibrate/guest.sh).
measure() { taskset -c 0 "$nullcall" getppid 1000 301; }
row() { echo "$1,$boot,$2,$(measure)" >>"$dir/raw.csv"; }

mkdir -p "$dir/boots/$which-$boot"
"$LAB_TOOL" meta "$dir/boots/$which-$boot" hookcost cases="$which" boot:="$boot" -- "$0" "$@"
if [ "$which" = a ]; then
	for r in $(seq "$rounds"); do row a "$r"; done
	exit 0
fi
[ ! -d /sys/module/delay ] || rmmod delay
for r in $(seq "$rounds"); do
	row b "$r"
	insmod "$(lab_ko delay)" loops=0
	row c "$r"
	echo 1 >/sys/module/delay/parameters/loops
	row d "$r"
	rmmod delay
done
