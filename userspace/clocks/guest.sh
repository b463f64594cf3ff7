#!/usr/bin/env bash
# In the lab kernel (run.sh boots it): the clocks' cmd sweep.  Copies the
# top-level .c files of a Linux tree's kernel/ (about 150 files, 3.5 MB)
# into the guest's /dev/shm (a tmpfs of its own if /dev/shm is not one),
# then runs from there
#   workloads/sweep.sh cmd --in-memory --ns 0,5000,20000 -r 3 -- md5sum FILES
# so that no timed run reads the host's files: md5sum, its libraries and
# the loader in sweep.sh's tmpfs, its input here.  Writes
# results/cmd-<date>-<time>/ (results/latest-cmd) unanalysed.
#
#   guest.sh [TREE]    TREE: a Linux source tree (default
#                            build/src/linux-source-6.12, from 'make kernel')
#
# Example:  scripts/vm.sh -- userspace/clocks/guest.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../scripts/lib.sh"
lab_help "$@"

[ $# -le 1 ] || bad_arg "usage: ${0##*/} [TREE]"
tree=${1:-$LAB_BUILD/src/linux-source-6.12}
[ -d "$tree/kernel" ] || die "no Linux tree at $tree (run 'make kernel')"
lab_root "a tmpfs, the delay module"

mem=/dev/shm/lab-clocks-md5
mounted=0
cleanup() {
	cd /
	if [ "$mounted" -eq 1 ]; then
		umount "$mem" || true
	else
		rm -rf "$mem"
	fi
	rmdir "$mem" 2>/dev/null || true
}
trap cleanup EXIT
mkdir -p "$mem"
if [ "$(stat -f -c %T /dev/shm)" != tmpfs ]; then
	mount -t tmpfs lab-clocks-md5 "$mem"
	mounted=1
fi
cp "$tree"/kernel/*.c "$mem/"
cd "$mem"
files=(*.c)
log "md5sum of ${#files[@]} files in $mem ($(du -sh . | cut -f1))"
"$LAB_ROOT/workloads/sweep.sh" cmd --in-memory --ns 0,5000,20000 -r 3 --no-analysis \
	-o "$LAB_ROOT/results" -- md5sum "${files[@]}"
