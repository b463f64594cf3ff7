#!/usr/bin/env bash
# checkpatch --strict on every patch of the series, shellcheck on every script.
#
# Example:  scripts/lint.sh     (what make lint runs)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
lab_help "$@"

ksrc=${KSRC:-$LAB_BUILD/src/linux-source-6.12}
[ -x "$ksrc/scripts/checkpatch.pl" ] || die "no kernel tree at $ksrc: run 'make kernel'"
status=0
while read -r patch; do
	case $patch in '' | '#'*) continue ;; esac
	# Its SPDX check needs Debian's python3-ply: the system python first.
	PATH=/usr/bin:$PATH "$ksrc/scripts/checkpatch.pl" --strict -q \
		"$LAB_ROOT/patches/$patch" || status=1
done <"$LAB_ROOT/series"
mapfile -t scripts < <(cd "$LAB_ROOT" && git ls-files '*.sh' .ci/run)
(cd "$LAB_ROOT" && shellcheck -x "${scripts[@]}") || status=1
[ "$status" -eq 0 ] && log "checkpatch and shellcheck are clean"
exit "$status"
