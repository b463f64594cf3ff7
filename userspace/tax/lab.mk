# The system-call tax: what seccomp, audit, tracers and mitigations add to
# each system call (userspace/tax).

## tax [CALLS=... TAXES=... WORKLOADS=... REPEATS=2 HOST_TAXES=... RESUME=DIR]: each tax's ns per call (three boots of VARIANT=tax), each workload under each tax, the host clock's A/B
# The tax variant unless VARIANT is given: the stock kernel has no audit,
# no BPF syscall and no mitigation compiled in.
TAX_VARIANT = $(if $(filter file,$(origin VARIANT)),tax,$(VARIANT))
tax: setup
	VARIANT=$(TAX_VARIANT) $(call lab_run,tax)

.PHONY: tax
