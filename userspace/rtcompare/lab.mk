# Stock versus PREEMPT_RT (userspace/rtcompare), and the lab kernels as
# Debian packages for a real machine.

# Under TCG the question (does RT bound the worst case?) has an answer only
# on the virtual clock, on one vCPU: on the host's clock the emulator's
# stalls are milliseconds, and with two vCPUs taking turns on one host
# thread a timer waits for the other's turn (README: Stock against
# PREEMPT_RT on the virtual clock).  run.sh chooses so (VM_CLOCK=auto,
# VM_VIRTUAL_CPUS=1); VM_CLOCK and VM_CPUS, given, win.

## rt-compare [RT_ARGS='-- --long']: build stock and rt if needed, the same suite on each, one comparison
##   (virtual clock and 1 vCPU unless VM_CLOCK / VM_CPUS say otherwise)
rt-compare: setup
	$(call lab_run,rtcompare,$(RT_ARGS))

## holds [HOLDS_ARGS=...]: spin against sleep as a latency source: rt-compare's delay member
##   only, a hold spinning at entry, sleeping at entry and spinning at exit, on stock, stock
##   booted preempt=full and rt (one boot a kernel; README: "Spin against sleep")
HOLDS_ARGS ?= --variants stock,stock:preempt=full,rt -- --only delay \
	--delay-holds spin@entry,sleep@entry,spin@exit
holds:
	$(MAKE) --no-print-directory rt-compare RT_ARGS='$(HOLDS_ARGS)'

## deb [VARIANT=stock|rt]: the lab kernel as installable .deb packages (bindeb-pkg) in build/deb/
deb:
	scripts/build-kernel.sh --deb

.PHONY: rt-compare holds deb
