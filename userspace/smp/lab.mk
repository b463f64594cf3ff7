# SMP micro-benchmarks beside perf bench and rt-tests (userspace/smp).

## smp [RUNS=5 N=500 VARIANT=stock|rt VM_CPUS=2]: every benchmark RUNS times in one boot, tables and plots
smp: setup
	$(call lab_run,smp)

.PHONY: smp
