#!/usr/bin/env bash
# Install the Debian packages the lab needs, only those that are missing.
#
#   deps.sh             install what is missing (root, or sudo)
#   deps.sh --dry-run   print what would be installed, change nothing
#
# It must work on a bare Debian 12 machine: nothing of the lab installed,
# no QEMU on PATH.  tests/host/test_deps.py runs it that way.
#
# Example:  scripts/deps.sh --dry-run
set -euo pipefail
. "$(dirname "$0")/lib.sh"
# -E: the trap also fires for a command that fails inside a function.
set -E
trap 'die "failed at line $LINENO: $BASH_COMMAND (exit status $?)"' ERR

dry_run=0
case ${1:-} in
'') ;;
-n | --dry-run) dry_run=1 ;;
-h | --help) lab_help --help ;;
*) die "unknown option '$1' (try --help)" ;;
esac

packages=(
	# kernel source and build
	linux-source-6.12 quilt make gcc flex bison bc libelf-dev libssl-dev
	ccache xz-utils cpio kmod
	# make deb: the kernel's bindeb-pkg
	dpkg-dev rsync debhelper
	# checkpatch.pl's SPDX check
	python3-ply python3-git
	# the VM and the guest's tools
	# (virtme-ng finds its console ports through udev's /dev/virtio-ports links;
	# QEMU itself is installed below)
	udev python3-venv trace-cmd
	# the sweep's runner: the staged archives' descriptions (JSON)
	jq
	# sweeps split over VMs and machines (make sweep JOBS=N)
	parallel
	# userspace: 32-bit test program, lint
	gcc-multilib shellcheck
	# the field's own tools the experiments compare with
	strace linux-perf rt-tests
	# the system-call taxes (userspace/tax): seccomp filters through
	# libseccomp, audit rules (auditctl; Debian's package also starts its
	# daemon on a host with systemd), BPF on the entry tracepoint
	libseccomp-dev auditd bpftrace
	# the results page's browser test (make report; tests/host/test_report.py)
	chromium
	# the BPF delay (userspace/bpfdelay): its compiler; libbpf and bpftool below;
	# pahole, which makes the BTF of the bpf kernel variant
	clang dwarves
)
# The workloads' own: each workload's file declares its packages
# (WL_PACKAGES; workloads/catalog.py), and a workload of one's own in
# LAB_WORKLOADS_DIR's folders too.
while read -r f; do
	read -r -a wl_packages <<<"$(wl_declared WL_PACKAGES "$f")"
	packages+=("${wl_packages[@]}")
done < <(wl_files)
# The BPF delay's library and skeleton generator, from bookworm-backports on
# Debian 12 (libbpf 1.4, bpftool 7.5: what it is built and tested with),
# from the release itself elsewhere.
bpf_packages=(libbpf-dev bpftool)

# Run a command, or only say it under --dry-run.
run() {
	if [ "$dry_run" -eq 1 ]; then
		printf 'would run: %s\n' "$*"
	else
		as_root "$@" || { status=$?; die "exit status $status from: $*"; }
	fi
}
installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

# QEMU 7.2 (Debian 12's own) corrupts guests that patch their kernel text
# while another vCPU runs it under multi-threaded TCG ("Oops: int3" when a
# tracepoint or static key flips under load); 10.0 from bookworm-backports
# does not.  Newer Debian releases carry a fixed QEMU themselves.
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
backports=()
if [ "$codename" = bookworm ]; then
	backports=(-t bookworm-backports)
	list=/etc/apt/sources.list.d/bookworm-backports.list
	if ! grep -rqs "bookworm-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
		log "adding bookworm-backports (for QEMU 10, libbpf 1.4, bpftool 7.5) in $list"
		if [ "$dry_run" -eq 1 ]; then
			printf 'would write %s\n' "$list"
		else
			echo "deb http://deb.debian.org/debian bookworm-backports main" |
				as_root tee "$list" >/dev/null
		fi
		run apt-get update -q
	fi
fi
found=$(qemu_major)
if [ "${found:-0}" -lt "$QEMU_TRUSTED_MAJOR" ]; then
	log "installing QEMU${backports[*]:+ from ${backports[1]}} (found: ${found:-none})"
	run env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		"${backports[@]}" qemu-system-x86
fi
bpf_missing=()
for p in "${bpf_packages[@]}"; do
	installed "$p" || bpf_missing+=("$p")
done
if [ ${#bpf_missing[@]} -gt 0 ]; then
	log "installing ${bpf_missing[*]}${backports[*]:+ from ${backports[1]}}"
	run env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		"${backports[@]}" "${bpf_missing[@]}"
fi

missing=()
for p in "${packages[@]}"; do
	installed "$p" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	log "all ${#packages[@]} Debian packages are installed"
	exit 0
fi
log "installing: ${missing[*]}"
run apt-get update -q
run env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
