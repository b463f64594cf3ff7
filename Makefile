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
# Guest tests of every variant: test-debug runs them in each boot but the fault walks'.
VARIANT_TESTS := tests/guest/test_variants.py
# The passes of 'make test-debug', one boot each (tests/README.md, "The
# debug variants"), each file a checker's reports fail.  Not the timing tests:
# the checkers make every path longer, and what a pass proves is that
# nothing is reported, on the host's clock like the stock pass.  An
# experiment's tests are listed while the experiment exists.
STRESS_TESTS := tests/guest/test_interfaces_stress.py
MODULE_TESTS := tests/guest/test_delay_module.py tests/guest/test_delay_sleep_exit.py \
	tests/guest/test_cgroup_target.py \
	$(wildcard tests/guest/test_irqhook.py tests/guest/test_msgq.py)
# debug: lockdep, KASAN, UBSAN, kmemleak ...; faults: the fault-injection
# walks, in a boot of the debug kernel of their own so that the two longest
# passes run side by side.
DEBUG_TESTS := $(VARIANT_TESTS) $(STRESS_TESTS) $(MODULE_TESTS)
FAULTS_TESTS := $(wildcard tests/guest/test_*faultinject.py)
# kcsan: data races.  test_variants.py last: its KCSAN check reads every
# report since boot, so it must come after the pass that provokes them.
KCSAN_TESTS := $(STRESS_TESTS) $(MODULE_TESTS) $(VARIANT_TESTS)
# nopreempt: no kernel preemption (the long-spin unload), and rt: PREEMPT_RT,
# with the module tests too: the sleeping delay depends on the preemption
# model more than anything else the lab adds.
NOPREEMPT_TESTS := $(VARIANT_TESTS) $(STRESS_TESTS)
RT_TESTS := $(VARIANT_TESTS) $(STRESS_TESTS) $(MODULE_TESTS)
# tax: the taxes only the tax variant can apply (audit, bpftrace) applied
# and put back, with the others.
TAX_TESTS := $(wildcard tests/guest/test_tax.py)
# The passes, longest first, and the variant each boots (its own name but
# for faults).  DEBUG_JOBS of them run at once: each VM keeps about one
# host CPU busy (its tests are mostly one process at a time).
DEBUG_PASSES := faults debug kcsan nopreempt rt $(if $(TAX_TESTS),tax)
pass_variant = $(if $(filter faults,$1),debug,$1)
DEBUG_JOBS ?= 2
# Where test-debug keeps each boot's output and streamed kernel log (no
# result of an experiment: under build/, with the other build products).
ifndef DEBUG_LOGS
DEBUG_LOGS := $(CURDIR)/build/test-debug-$(shell date +%Y%m%d-%H%M%S)
endif
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

## all: set everything up, boot the patched kernel, calibrate, then the main job: a grep sweep
# The sweep is a short one (five points, one run each: about a minute of
# the VM on the virtual clock); 'make sweep W=grep' runs the full one.
FIRST_SWEEP := grep -l 0:20000:5000 -r 1
all: calibrate
	$(call lab_run,sweep,$(FIRST_SWEEP))

help:
	@sed -n 's/^## //p' $(MAKEFILE_LIST)

## deps [DEPS_FLAGS=--dry-run]: install the Debian packages the lab needs (root)
deps:
	scripts/deps.sh $(DEPS_FLAGS)

## venv: the project virtualenv (virtme-ng, matplotlib, pytest, pinned; lablib, editable)
venv: $(VENV)/.stamp
$(VENV)/.stamp: requirements.txt pyproject.toml
	@command -v python3 >/dev/null || { echo "make venv: no python3 on this machine;" \
		"run 'make deps' first (it installs python3-venv)" >&2; exit 1; }
	@python3 -c 'import ensurepip, venv' 2>/dev/null || { echo "make venv: this python3" \
		"cannot make a virtualenv (no ensurepip); run 'make deps' first (python3-venv)" >&2; \
		exit 1; }
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --cache-dir $(LAB_CACHE)/pip -r requirements.txt
	$(VENV)/bin/pip install -q --cache-dir $(LAB_CACHE)/pip --no-build-isolation -e .
	touch $@

## kernel [VARIANT=stock|nohook|rt]: unpack linux-source-6.12, quilt push -a, build
kernel:
	scripts/build-kernel.sh

$(KERNEL_IMAGE):
	scripts/build-kernel.sh

## module [VARIANT=...]: build modules/* against that kernel into build/modules/<release>/
module: $(KERNEL_IMAGE)
	$(MAKE) -C modules KDIR=$(KOBJ)

## userspace: liblab, 'lab', every experiment's tools and the workloads' client
# irqhook's tool includes the series' <linux/irqhook.h> from the headers
# of the variant's built kernel (the same in every variant).
userspace:
	$(MAKE) -C userspace KHDR=$(KOBJ)/usr/include
	$(MAKE) -C workloads

# After the packages, two builds at a time: the virtualenv (pip, one CPU)
# beside the kernel (its unpacking and configuring take one CPU), then the
# modules beside the tools.  Each its own make, so that the kernel is
# built once whatever else a caller's make asks of it.
setup: deps
	@$(MAKE) --no-print-directory -j2 venv kernel
	@$(MAKE) --no-print-directory -j2 module userspace

## vm [VARIANT=...]: a shell in the patched kernel (VM_ACCEL=kvm|tcg to choose)
vm: setup
	$(VM)

## vm-run CMD='...': run CMD in the patched kernel, its status is make's
vm-run: setup
	@test -n "$(CMD)" || { echo "usage: make vm-run CMD='command'" >&2; exit 2; }
	$(VM) -- bash -c '$(CMD)'

# The experiments' own targets (calibrate, irqhook-sweep, bench-hook, sweep ...).
# Every experiment runs through 'lab NAME', which runs its host runner (it
# boots the lab kernel, runs the guest script there and analyses here):
#   $(call lab_run,smp,-r 3)
LAB := $(VENV)/bin/lab
lab_run = $(LAB) $(1) $(2)
include $(sort $(wildcard userspace/*/lab.mk workloads/lab.mk))

## test: the host tests, the in-VM tests on stock, the timing ones on the virtual clock
# scripts/test.sh runs the stock guest pass with the host tests beside it,
# and beside both the timing pass followed by a second stock boot of a few
# of the guest test files (each VM keeps about one host CPU busy).  The
# other kernels, rt among them, boot in test-debug: a fresh machine builds
# each from an empty ccache.  vm.sh's limit only stops a guest that hangs:
# the stock pass takes 20 minutes on a quiet host, and has taken more than
# the default hour beside three other VMs and a kernel build.
# Each boot's kernel log is kept in build/test-logs (a guest that dies
# leaves its last words there; vm.sh shows them).
TEST_LOGS := $(CURDIR)/build/test-logs
test: setup $(TEST_PREPARE)
	PY=$(PY) VM=$(VM) TEST_LOGS=$(TEST_LOGS) TEST_CLOCK=$(TEST_CLOCK) scripts/test.sh

## test-timing [REPEAT=20]: the guest tests that assert a time, REPEAT times in one boot
REPEAT ?= 20
# A round takes about 2 minutes of guest time, and a busy host stretches
# that: ten minutes a round before vm.sh stops the guest.
test-timing: setup
	VM_CLOCK=$(TEST_CLOCK) VM_TIMEOUT=$${VM_TIMEOUT:-$$(( $(REPEAT) * 600 + 900 ))} \
		$(VM) -- bash -c 'for i in $$(seq $(REPEAT)); do \
		echo "test-timing: round $$i of $(REPEAT)"; \
		$(PY) -m pytest -q -p no:cacheprovider -m timing tests/guest || exit 1; done'

## test-debug: build the debug variants (debug kcsan nopreempt rt tax), boot one per pass
## (faults debug kcsan nopreempt rt tax) and run it; no checker may report (not part of 'make test')
# Every pass runs even if one fails, DEBUG_JOBS at a time, each in a boot
# of its own with its own time limit (on a busy 2-core host the debug pass
# ran 64 tests in an hour, and vm.sh's default of 3600 s stopped it
# there); its output and the guest's kernel log, streamed as it is
# written, go to $(DEBUG_LOGS)/PASS.log and PASS-kernel.log, one line a
# pass to summary.txt as each ends.
# The tools come after the kernels: on a fresh clone no stock kernel has
# made the headers irqhook's tool includes (its build failed there).
test-debug: deps venv
	@mkdir -p $(DEBUG_LOGS)
	@for v in $(sort $(foreach p,$(DEBUG_PASSES),$(call pass_variant,$p))); do \
		$(MAKE) --no-print-directory VARIANT=$$v kernel module || exit 1; done
	@$(MAKE) --no-print-directory VARIANT=$(call pass_variant,$(firstword $(DEBUG_PASSES))) userspace
	@$(MAKE) --no-print-directory debug-passes DEBUG_LOGS=$(DEBUG_LOGS)

# The passes, their kernels built: DEBUG_JOBS at once, then the verdict.
debug-passes:
	@mkdir -p $(DEBUG_LOGS)
	@echo "test-debug: $(words $(DEBUG_PASSES)) passes ($(DEBUG_PASSES)), $(DEBUG_JOBS) at a time;" \
		"each one's output in $(DEBUG_LOGS)/PASS.log"
	@printf '%s\n' $(DEBUG_PASSES) | xargs -P $(DEBUG_JOBS) -I{} \
		$(MAKE) --no-print-directory -s debug-pass-{} DEBUG_LOGS=$(DEBUG_LOGS)
	@echo "test-debug: logs in $(DEBUG_LOGS)"; \
	failed=$$(awk '$$5 != 0 {print $$2}' $(DEBUG_LOGS)/summary.txt | tr -d : | xargs); \
	[ "$$(wc -l < $(DEBUG_LOGS)/summary.txt)" -eq $(words $(DEBUG_PASSES)) ] || failed="$$failed (a pass left no status)"; \
	[ -z "$$failed" ] || { echo "test-debug: failed: $$failed" >&2; exit 1; }

# One pass of test-debug, its output to its log, its status to summary.txt.
debug-pass-%:
	@echo "test-debug: $*: started $$(date +%T)"; start=$$(date +%s); \
	$(MAKE) --no-print-directory debug-boot-$* DEBUG_LOGS=$(DEBUG_LOGS) > $(DEBUG_LOGS)/$*.log 2>&1; \
	status=$$?; \
	echo "test-debug: $*: exit status $$status in $$(( $$(date +%s) - start )) s" \
		| tee -a $(DEBUG_LOGS)/summary.txt; \
	tail -n 3 $(DEBUG_LOGS)/$*.log | sed 's/^/    /'

# One pass: make test-debug-kcsan ...  The tests' recorded figures (the
# fault walks' points, KCSAN's counters) go to PASS.xml.
test-debug-%: venv
	$(MAKE) VARIANT=$(call pass_variant,$*) kernel module userspace
	@mkdir -p $(DEBUG_LOGS)
	$(MAKE) --no-print-directory debug-boot-$* DEBUG_LOGS=$(DEBUG_LOGS)

# The debug kernel reports every KASAN finding, not only the first: one
# boot's first came at 0.08 s, in the kernel's own early interrupt code,
# and KASAN was silent for the rest of that boot.
DEBUG_APPEND := kasan_multi_shot
# A pass's boot, its kernel built: two passes of one variant at once must
# not both run its kernel's make (they raced on include/generated/).
# pytest's output is also kept in PASS.out, written from the guest: a debug
# guest whose udev is late runs the command on its console, and what it
# prints there never reaches the host.  The JUnit file is
# xunit1, whose test cases may carry the properties the tests record (the
# walks' points, KCSAN's counters); pytest warns of them under xunit2.
debug-boot-%:
	VARIANT=$(call pass_variant,$*) VM_KLOG=$(DEBUG_LOGS)/$*-kernel.log VM_UDEV=stop \
		VM_TCG_THREAD=$(or $(TCG_THREAD_$*),$(VM_TCG_THREAD)) \
		VM_APPEND='$(if $(filter debug,$(call pass_variant,$*)),$(DEBUG_APPEND))' \
		VM_TIMEOUT=$${VM_TIMEOUT:-$(or $(TIMEOUT_$*),10800)} \
		$(VM) -- bash -c 'set -o pipefail; "$$0" "$$@" 2>&1 | tee $(DEBUG_LOGS)/$*.out' \
		$(PY) -m pytest -q -rs --durations=10 -p no:cacheprovider -m 'not timing' \
		-o junit_family=xunit1 --junitxml=$(DEBUG_LOGS)/$*.xml $(TESTS_$*)

TESTS_debug := $(DEBUG_TESTS)
TESTS_faults := $(FAULTS_TESTS)
TESTS_kcsan := $(KCSAN_TESTS)
TESTS_nopreempt := $(NOPREEMPT_TESTS)
TESTS_rt := $(RT_TESTS)
TESTS_tax := $(TAX_TESTS)
# The rt boot's vCPUs on one host thread, on the host's clock (no time is
# asserted): one of three rt boots with a host thread per vCPU ended
# without a word 58 s in, and the virtual clock took 13.5 min
# where this took 3 (its workers spin in the hook for half a minute of
# guest time, which icount emulates one instruction at a time).
TCG_THREAD_rt := single
# On a busy host the debug pass reached its fault walks after 1 h 53 min
# and the 3 h default stopped it in the second: the walks
# have a boot of their own, and a longer limit.
TIMEOUT_faults := 18000

## bench: every benchmark that prints figures
bench: $(BENCH_TARGETS)

## report: results/index.html, one page of every result folder and comparison, newest first
report: venv
	$(LAB) report $(RESULTS) -o $(RESULTS)/index.html

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

.PHONY: all help deps venv kernel module userspace setup vm vm-run test test-debug debug-passes test-timing \
	bench report lint clean distclean
