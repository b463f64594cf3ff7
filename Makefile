# Kernel-measurement lab: top-level entry points.  'make help' lists them.
#
# The kernel object tree is build/obj (VARIANT=stock) or build/obj-VARIANT,
# the VM is virtme-ng from .venv, and everything worth keeping across clones
# (ccache, pip cache, the KVM probe) lives in $(LAB_CACHE), outside the
# repository.  Each experiment adds its own targets in its folder's lab.mk.

SHELL := /bin/bash
LAB_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/kernel-lab
VARIANT ?= stock
KOBJ := $(CURDIR)/build/obj$(if $(filter-out stock,$(VARIANT)),-$(VARIANT))
VENV ?= $(CURDIR)/.venv
KERNEL_IMAGE := $(KOBJ)/arch/x86/boot/bzImage
VM := scripts/vm.sh
PY := $(VENV)/bin/python
RESULTS := $(CURDIR)/results
# Guest tests of every boot: a short boot of each extra variant runs these.
VARIANT_TESTS := tests/guest/test_variants.py
# The debug variant runs every test of the lab's kernel code and the stress
# pass: lockdep, KASAN, UBSAN, kmemleak ... must have nothing to say.  Not
# the timing tests: its checkers make every path longer, and what it proves
# is that nothing is reported, on the host's clock like the stock pass.
DEBUG_TESTS := $(VARIANT_TESTS) tests/guest/test_interfaces_stress.py \
	tests/guest/test_delay_module.py tests/guest/test_cgroup_target.py \
	tests/guest/test_irqhook.py tests/guest/test_msgq.py
# The clock of the guest tests that assert a time (marked 'timing'):
# virtual (QEMU's instruction counter) makes every figure they assert the
# same on a slow or busy machine as on a fast one.  Under KVM there is no
# virtual clock, and the host's is the only one.  The other guest tests
# run on the host's clock, where TCG runs the vCPUs in parallel: a kernel
# build in the guest takes half the time it takes under icount.
TEST_CLOCK ?= $(if $(filter kvm,$(VM_ACCEL)),host,virtual)

export LAB_CACHE VARIANT
# W names the workload of 'make sweep W=...', but Kbuild reads W as its
# extra-warnings level: passed on, 'make sweep W=grep' rebuilt the whole
# kernel with kernel-doc checks.  It must not reach the kernel's make.
unexport W
MAKEOVERRIDES := $(filter-out W=%,$(MAKEOVERRIDES))

.DEFAULT_GOAL := all

## all: set everything up, boot the patched kernel, load 'delay', calibrate
all: calibrate

help:
	@sed -n 's/^## //p' $(MAKEFILE_LIST)

## deps [DEPS_FLAGS=--dry-run]: install the Debian packages the lab needs (root)
deps:
	scripts/deps.sh $(DEPS_FLAGS)

## venv: the project virtualenv (virtme-ng, matplotlib, pytest), pinned
venv: $(VENV)/.stamp
$(VENV)/.stamp: requirements.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --cache-dir $(LAB_CACHE)/pip -r requirements.txt
	touch $@

## kernel [VARIANT=stock|nohook|rt]: unpack linux-source-6.12, quilt push -a, build
kernel:
	scripts/build-kernel.sh

$(KERNEL_IMAGE):
	scripts/build-kernel.sh

## module [VARIANT=...]: build modules/* against that kernel into build/modules/<release>/
module: $(KERNEL_IMAGE)
	$(MAKE) -C modules KDIR=$(KOBJ)

## userspace: liblab, 'lab' and every experiment's tools
userspace:
	$(MAKE) -C userspace

setup: deps venv kernel module userspace

## vm [VARIANT=...]: a shell in the patched kernel (VM_ACCEL=kvm|tcg to choose)
vm: setup
	$(VM)

## vm-run CMD='...': run CMD in the patched kernel, its status is make's
vm-run: setup
	@test -n "$(CMD)" || { echo "usage: make vm-run CMD='command'" >&2; exit 2; }
	$(VM) -- bash -c '$(CMD)'

# The experiments' own targets (calibrate, irqhook-sweep, bench-hook, sweep ...).
include $(sort $(wildcard userspace/*/lab.mk workloads/lab.mk))

## test: host tests, the in-VM tests on stock (timing ones on the virtual clock), then rt
test: setup $(TEST_PREPARE)
	$(PY) -m pytest -q --durations=10 tests/host
	$(VM) -- $(PY) -m pytest -q --durations=15 -p no:cacheprovider -m 'not timing' tests/guest
	VM_CLOCK=$(TEST_CLOCK) $(VM) -- $(PY) -m pytest -q --durations=5 -p no:cacheprovider \
		-m timing tests/guest
	$(MAKE) VARIANT=rt kernel module
	VARIANT=rt VM_CLOCK=$(TEST_CLOCK) $(VM) -- $(PY) -m pytest -q -p no:cacheprovider \
		$(VARIANT_TESTS)

## test-timing [REPEAT=20]: the guest tests that assert a time, REPEAT times in one boot
REPEAT ?= 20
# A round takes about 2 minutes of guest time, and a busy host stretches
# that: ten minutes a round before vm.sh stops the guest.
test-timing: setup
	VM_CLOCK=$(TEST_CLOCK) VM_TIMEOUT=$${VM_TIMEOUT:-$$(( $(REPEAT) * 600 + 900 ))} \
		$(VM) -- bash -c 'for i in $$(seq $(REPEAT)); do \
		echo "test-timing: round $$i of $(REPEAT)"; \
		$(PY) -m pytest -q -p no:cacheprovider -m timing tests/guest || exit 1; done'

## test-debug: build the debug variant; its module tests and stress pass, no report allowed
## (not part of 'make test': under TCG its checkers make a boot take many minutes)
# Its own time limit: on a busy 2-core host the pass ran 64 tests in an
# hour, and vm.sh's default (VM_TIMEOUT=3600) stopped it there.
test-debug: deps venv userspace
	$(MAKE) VARIANT=debug kernel module
	VARIANT=debug VM_TIMEOUT=$${VM_TIMEOUT:-10800} $(VM) -- $(PY) -m pytest -q --durations=10 \
		-p no:cacheprovider -m 'not timing' $(DEBUG_TESTS)

## bench: every benchmark that prints figures
bench: $(BENCH_TARGETS)

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

.PHONY: all help deps venv kernel module userspace setup vm vm-run test test-debug test-timing \
	bench lint clean distclean
