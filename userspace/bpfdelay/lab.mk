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

.PHONY: test-bpfdelay
