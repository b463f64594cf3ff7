# The wake-up experiment on /dev/irqhook (userspace/irqhook).

## irqhook-sweep [IRQHOOK_N=2000]: the wake-up grid in the VM, analysed here
IRQHOOK_N ?= 2000
irqhook-sweep: setup
	$(VM) -- userspace/irqhook/sweep.sh --no-analysis -n $(IRQHOOK_N) -o $(RESULTS)
	for t in $(RESULTS)/latest-irqhook-sweep/traced-*/; do \
		$(PY) userspace/irqhook/trace_report.py $$t || exit 1; done
	$(PY) userspace/irqhook/sweep_report.py $(RESULTS)/latest-irqhook-sweep

.PHONY: irqhook-sweep
