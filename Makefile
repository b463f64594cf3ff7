# Kernel-measurement lab: top-level entry points.  'make help' lists them.
#
# The kernel object tree is build/obj, the VM is virtme-ng from .venv, and
# everything worth keeping across clones (ccache, pip cache, the KVM probe)
# lives in $(LAB_CACHE), outside the repository.

SHELL := /bin/bash
LAB_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/kernel-lab
KOBJ ?= $(CURDIR)/build/obj
VENV ?= $(CURDIR)/.venv
KERNEL_IMAGE := $(KOBJ)/arch/x86/boot/bzImage
VM := scripts/vm.sh
PY := $(VENV)/bin/python

export LAB_CACHE KOBJ

.DEFAULT_GOAL := all

## all: set everything up, boot the patched kernel, load 'delay', calibrate
all: calibrate

help:
	@sed -n 's/^## //p' $(MAKEFILE_LIST)

## deps: install the Debian packages the lab needs (root)
deps:
	scripts/deps.sh

## venv: the project virtualenv (virtme-ng, matplotlib, pytest), pinned
venv: $(VENV)/.stamp
$(VENV)/.stamp: requirements.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --cache-dir $(LAB_CACHE)/pip -r requirements.txt
	touch $@

## kernel: unpack linux-source-6.12 (or KSRC=...), quilt push -a, build
kernel:
	scripts/build-kernel.sh

$(KERNEL_IMAGE):
	scripts/build-kernel.sh

## module: build modules/delay/delay.ko (and the tests' hooktest.ko)
module: $(KERNEL_IMAGE)
	$(MAKE) -C modules KDIR=$(KOBJ)

## userspace: liblab and the tools
userspace:
	$(MAKE) -C userspace

setup: deps venv kernel module userspace

## vm: a shell in the patched kernel (VM_ACCEL=kvm|tcg to choose)
vm: setup
	$(VM)

## vm-run CMD='...': run CMD in the patched kernel, its status is make's
vm-run: setup
	@test -n "$(CMD)" || { echo "usage: make vm-run CMD='command'" >&2; exit 2; }
	$(VM) -- bash -c '$(CMD)'

## calibrate: added syscall latency per loop, into results/ (LOOPS=0:700:50)
calibrate: setup
	$(VM) -- scripts/guest-calibrate.sh $(if $(LOOPS),--loops $(LOOPS))

## irqhook-sweep: the wake-up experiment grid in the VM (IRQHOOK_N=2000 events a run)
IRQHOOK_N ?= 2000
IRQHOOK_OUT := results/irqhook-sweep-$(shell date +%Y%m%d-%H%M%S)
irqhook-sweep: setup
	$(VM) -- userspace/irqhook/irqhook-sweep.sh -A -n $(IRQHOOK_N) -o $(IRQHOOK_OUT)
	for t in $(IRQHOOK_OUT)/traced-*/; do $(PY) userspace/analysis/irqhook_trace.py $$t || exit 1; done
	$(PY) userspace/analysis/irqhook_sweep.py $(IRQHOOK_OUT)

## sweep W=kbuild|grep|apache|all [SWEEP_ARGS='-l 0:700:100 -r 2']: workload
##   against added syscall latency in the VM, analysed into results/<W>-<time>/
W ?= apache
sweep: setup
	scripts/sweep-vm.sh $(W) $(SWEEP_ARGS)

## test: host tests, then the in-VM tests on the patched kernel
test: setup
	$(PY) -m pytest -q tests/host
	workloads/kbuild-prepare.sh small build/kbuild-small build/src/linux-source-6.12
	$(VM) -- $(PY) -m pytest -q -p no:cacheprovider tests/guest

## bench-hook: cost of the hook: compiled out, idle, loops=0, loops=1
bench-hook: setup
	scripts/bench-hook.sh

bench: bench-hook

## lint: checkpatch --strict on the series, shellcheck on the scripts
lint:
	scripts/lint.sh

## clean: remove build products (keeps the unpacked source and ccache)
clean:
	-$(MAKE) -C userspace clean
	-$(MAKE) -C modules KDIR=$(KOBJ) clean

## distclean: remove build/ and .venv (the cache in $(LAB_CACHE) stays)
distclean: clean
	rm -rf build $(VENV)

.PHONY: all help deps venv kernel module userspace setup vm vm-run calibrate irqhook-sweep sweep \
	test bench bench-hook lint clean distclean
