# The headline figures under the host's clock and the virtual one (userspace/clocks).

## clocks [CLOCKS_ARGS='--only calibrate,smp']: short runs of each experiment on both clocks, one side-by-side report
clocks: setup
	$(call lab_run,clocks,$(CLOCKS_ARGS))

.PHONY: clocks
