# The wake-up experiment on /dev/irqhook (userspace/irqhook).

## irqhook-sweep [IRQHOOK_N=2000]: the wake-up grid in the VM, analysed here
IRQHOOK_N ?= 2000
irqhook-sweep: setup
	$(call lab_run,irqhook,-n $(IRQHOOK_N))

.PHONY: irqhook-sweep
