# shellcheck shell=bash disable=SC2034  # variables for workloads/sweep.sh
# The tax experiment's hooks into a workload sweep (lab sweep --hooks
# userspace/tax/sweep-hooks.sh, with --hook-var for these settings):
#   TAX=NAME          the workload under one of the taxes (taxes.sh) for the
#                     whole sweep: applied after the staging, put back
#                     before the calibration and however the sweep ends
#   COUNT_CLIENTS=1   (a server) after the points, its measures once more
#                     with the clients in a cgroup of their own that the
#                     module counts instead of the server's: the clients'
#                     calls a unit of work (clients.csv) and by number
#                     (by_call/, clients_by_call.csv), which lablib.tax.
#                     predict adds for the taxes every process pays
#   DELAY_CLIENTS=1   (a server) the clients delayed and counted with the
#                     server, in a cgroup beside its own under the one the
#                     module targets: a stand-in for a cost every process pays
#   AUDIT_EXE=PATH    on a machine's own kernel, the program the audit
#                     rules watch (-F exe=; default every program)
# On a machine's own kernel (its command line has no lab.variant=: lab
# sweep --here outside the lab's VM) the taxes take the forms that leave
# the machine's own set-up alone (taxes.sh, TAX_HERE): trace in a trace
# instance of its own, in tracefs found or mounted for the sweep; bpftrace
# with the running kernel's BTF, beside the sweep as in the VM.
# meta.json says each ("tax", "tax_command", "count_clients",
# "delay_clients").  Sourced by workloads/sweep.sh after the workload.
grep -q 'lab\.variant=' "${LAB_CMDLINE:-/proc/cmdline}" || TAX_HERE=1
TAX_BPFTRACE_BESIDE=1
TAX_AUDIT_EXE=${AUDIT_EXE:-}
# shellcheck source=userspace/tax/taxes.sh
. "$LAB_ROOT/userspace/tax/taxes.sh"
TAX=${TAX:-}
COUNT_CLIENTS=${COUNT_CLIENTS:-0}
DELAY_CLIENTS=${DELAY_CLIENTS:-0}
WITH_CLIENTS=$DELAY_CLIENTS
# The taxes' tools go into a staged root too.
STAGE_PROGRAMS+=("${TAX_PROGRAMS[@]}")

hook_check() {
	[ -z "$TAX" ] || tax_known "$TAX" || bad_arg "TAX wants one of ${TAXES_KNOWN[*]}, not '$TAX'"
	local v
	for v in COUNT_CLIENTS DELAY_CLIENTS; do
		[[ ${!v} =~ ^[01]$ ]] || bad_arg "$v wants 0 or 1, not '${!v}'"
		[ "${!v}" -eq 0 ] || [ "${WL_SERVER:-0}" = 1 ] ||
			bad_arg "$v: $WORKLOAD is not a server with clients (WL_SERVER=1)"
	done
	[ "$DELAY_CLIENTS" -eq 0 ] || [ "$COUNT_CLIENTS" -eq 0 ] ||
		bad_arg "DELAY_CLIENTS and COUNT_CLIENTS: the clients are delayed with the server or counted apart, not both"
	META_ARGS+=("count_clients:=$( ((COUNT_CLIENTS)) && echo true || echo false)"
		"delay_clients:=$( ((DELAY_CLIENTS)) && echo true || echo false)")
}

# What the sweep does besides its points (lab sweep --dry-run).
hook_describe() {
	printf '%s' "${TAX:+; under the tax $TAX}"
	[ "$COUNT_CLIENTS" -eq 0 ] || printf '; then the clients'"'"' calls counted'
	[ "$DELAY_CLIENTS" -eq 0 ] || printf '; the clients delayed with the server'
}

hook_ready() {
	[ -n "$TAX" ] || return 0
	local why
	[ "$TAX:${TAX_HERE:-}" != trace:1 ] || tax_tracefs
	why=$(tax_why "$TAX")
	[ -z "$why" ] || die "TAX=$TAX: $why"
}

# The tax applied: its machine-wide part now; its command (TAX_CMD) before
# the shell of each timed window (TIMED_TAX) and before a server (WL_TAX),
# from the staged root if there is one.
hook_begin() {
	[ -n "$TAX" ] || return 0
	local prog
	TAX_SCRATCH=$SCRATCH/tax
	mkdir -p "$TAX_SCRATCH"
	tax_on "$TAX"
	WL_TAX=("${TAX_CMD[@]}") TIMED_TAX=("${TAX_CMD[@]}")
	if [ ${#TAX_CMD[@]} -gt 0 ] && [ -n "$STAGE" ]; then
		# Where it is, not a link to it (/bin is /usr/bin's).
		prog=$(readlink -f "$(command -v "${TAX_CMD[0]}")")
		[ -x "$STAGE$prog" ] ||
			die "TAX=$TAX: the staged root has no $prog (an archive of an older lab? stage again)"
		TIMED_TAX=("${STAGE_RUN[@]}" "$STAGE$prog" "${TAX_CMD[@]:1}")
	fi
	if [[ $TAX == strace* ]]; then
		# A server's tracer stays outside the work cgroup, so that its own
		# calls are neither counted nor delayed, and detached (-D: the
		# daemon's start returns while strace follows it).
		local n=$((${#TIMED_TAX[@]} - ${#TAX_CMD[@]} + 1))
		SERVER_TRACER=("${TIMED_TAX[@]:0:n}" -D "${TIMED_TAX[@]:n}") WL_TAX=()
	fi
	META_ARGS+=(tax="$TAX" "tax_command=${TAX_CMD[*]}")
	log "under the tax $TAX${TAX_CMD[*]:+: ${TAX_CMD[*]}}"
}

# The clients' count: the server's measures once more, at no delay, with
# the clients in a cgroup the module counts instead of the work cgroup.
# The server of the last point answers.
hook_after_points() {
	[ "$COUNT_CLIENTS" -eq 1 ] || return 0
	local path
	path=/lab-clients-$$
	CLIENT_CG=$(cgroup2_root)$path
	mkdir "$CLIENT_CG" || die "cannot create the cgroup $CLIENT_CG"
	delay_set "$KNOB" 0
	delay_set cgroup "$path"
	head -n 1 "$LAB_DIR/raw.csv" >"$LAB_DIR/clients.csv"
	POINT="the clients' count" TAG=clients RECORD_TO=clients.csv REPEAT=1
	if [ "$KNOB" = ns ]; then LOOPS='' NS=0; else LOOPS=0 NS=''; fi
	log "counting the clients' calls (the measures once more, the clients' cgroup counted)"
	by_call_copy before
	wl_run
	by_call_copy after clients_by_call.csv
	RECORD_TO=raw.csv
	delay_set cgroup "$TARGET_CG_PATH"
	cgroup_remove "$CLIENT_CG"
	CLIENT_CG=
}

# Before the calibration, which measures the delay's own cost: untaxed.
hook_end() {
	WL_TAX=() SERVER_TRACER=() TIMED_TAX=()
	tax_off "$LAB_DIR"
}
hook_restore() {
	tax_off
	tax_tracefs_put
}
