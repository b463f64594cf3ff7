# The BPF delay (userspace/bpfdelay) on the lab's virtual clock.

## test-bpfdelay: the BPF delay's guest tests in a boot of VARIANT=bpf on the virtual clock (not part of 'make test')
# The bpf variant is the stock kernel with BTF and BPF on the tracepoints;
# the loader and callloop are built on the host (the guest's root is the
# host's), from the host kernel's BTF or, where it has none, the variant's.
# One boot of its own: make test boots only the stock kernel,
# and the variant's first build takes as long as the stock one's.
test-bpfdelay: venv
	$(MAKE) --no-print-directory VARIANT=bpf kernel
	$(MAKE) --no-print-directory -C userspace/bpfdelay \
		$(if $(wildcard /sys/kernel/btf/vmlinux),,VMLINUX_BTF=$(CURDIR)/build/obj-bpf/vmlinux)
	VARIANT=bpf VM_CLOCK=$(TEST_CLOCK) VM_KLOG=$(TEST_LOGS)/bpfdelay-kernel.log \
		$(VM) -- $(PY) -m pytest -q -rs -p no:cacheprovider tests/guest/test_bpfdelay.py

## bpfdelay-against [AGAINST_W=grep] [AGAINST_NS=0:18000:2250]: the workload swept at the
##   same ns points through the delay module and through the BPF delay, one boot (one vCPU) of
##   VARIANT=bpf on the virtual clock, then 'lab bpfdelay --against' sets them point against
##   point into results/bpfdelay-against-<time>/ (the sweeps in results/bpfdelay-sweeps/)
AGAINST_W ?= grep
AGAINST_NS ?= 0:18000:2250
AGAINST_SWEEPS := $(CURDIR)/results/bpfdelay-sweeps
bpfdelay-against: venv
	$(MAKE) --no-print-directory VARIANT=bpf kernel module
	$(MAKE) --no-print-directory userspace
	$(MAKE) --no-print-directory -C userspace/bpfdelay \
		$(if $(wildcard /sys/kernel/btf/vmlinux),,VMLINUX_BTF=$(CURDIR)/build/obj-bpf/vmlinux)
	VARIANT=bpf VM_CLOCK=virtual VM_VIRTUAL_CPUS=1 VM_KLOG=$(AGAINST_SWEEPS)/kernel.log \
		$(VM) -- sh -ec '\
		for d in module bpf; do $(LAB) sweep $(AGAINST_W) --here --delay $$d \
			--ns $(AGAINST_NS) -o $(AGAINST_SWEEPS)/$$d; done'
	$(LAB) bpfdelay --against $(AGAINST_SWEEPS)/module/latest-$(AGAINST_W) \
		$(AGAINST_SWEEPS)/bpf/latest-$(AGAINST_W)

.PHONY: test-bpfdelay bpfdelay-against
