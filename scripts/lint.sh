#!/usr/bin/env bash
# Lint: checkpatch --strict on every patch of the series and every module
# source; shellcheck on every script; ruff (ruff.toml) on the Python code.
#
# Example:  scripts/lint.sh     (what make lint runs)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
lab_help "$@"

ksrc=${KSRC:-$LAB_BUILD/src/linux-source-6.12}
[ -x "$ksrc/scripts/checkpatch.pl" ] || die "no kernel tree at $ksrc: run 'make kernel'"
ruff=$LAB_VENV/bin/ruff
[ -x "$ruff" ] || die "no $ruff: run 'make venv'"
status=0
while read -r patch; do
	case $patch in '' | '#'*) continue ;; esac
	# Its SPDX check needs Debian's python3-ply (the system python first)
	# and runs from the kernel tree, where it reads the licence files.
	(cd "$ksrc" && PATH=/usr/bin:$PATH scripts/checkpatch.pl --strict -q \
		"$LAB_ROOT/patches/$patch") || status=1
done <"$LAB_ROOT/series"
# The out-of-tree modules' own sources (uapi headers included), as files.
mapfile -t sources < <(cd "$LAB_ROOT" && git ls-files 'modules/*.[ch]')
for f in "${sources[@]}"; do
	[ -L "$LAB_ROOT/$f" ] && continue
	(cd "$ksrc" && PATH=/usr/bin:$PATH scripts/checkpatch.pl --strict --no-tree -q -f \
		"$LAB_ROOT/$f") || status=1
done
mapfile -t scripts < <(cd "$LAB_ROOT" && git ls-files '*.sh' .ci/run)
(cd "$LAB_ROOT" && shellcheck -x "${scripts[@]}") || status=1
(cd "$LAB_ROOT" && "$ruff" check --quiet --no-cache userspace workloads tests) || status=1
[ "$status" -eq 0 ] && log "checkpatch, shellcheck and ruff are clean"
exit "$status"
