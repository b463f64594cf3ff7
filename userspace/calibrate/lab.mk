# The calibration: loop count -> added system-call latency (userspace/calibrate).

## calibrate [LOOPS=0:700:50]: boot, measure into results/calibrate-<time>/, analyse here
# On the virtual clock under TCG (VM_CLOCK=auto), the host's under KVM:
# VM_CLOCK=host keeps the host's.
calibrate: setup
	$(call lab_run,calibrate,$(if $(LOOPS),-l $(LOOPS)))

.PHONY: calibrate

## bench-calibrate [RUNS=5 BOOTS=2]: spread of the calibration's slope and R^2 within and across boots
bench-calibrate: setup
	userspace/calibrate/bench.sh

BENCH_TARGETS += bench-calibrate
.PHONY: bench-calibrate
