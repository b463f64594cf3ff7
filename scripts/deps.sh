#!/usr/bin/env bash
# Install the Debian packages the lab needs, only those that are missing.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

packages=(
	# kernel source and build
	linux-source-6.12 quilt make gcc flex bison bc libelf-dev libssl-dev
	ccache xz-utils cpio kmod
	# checkpatch.pl's SPDX check
	python3-ply python3-git
	# the VM and the guest's tools
	# (virtme-ng finds its console ports through udev's /dev/virtio-ports links)
	qemu-system-x86 udev python3-venv trace-cmd
	# userspace: 32-bit test program, lint
	gcc-multilib shellcheck
)

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	log "all ${#packages[@]} Debian packages are installed"
	exit 0
fi
log "installing: ${missing[*]}"
as_root apt-get update -q
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
