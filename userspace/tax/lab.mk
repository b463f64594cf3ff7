# The system-call tax: what seccomp, audit, tracers and mitigations add to
# each system call (userspace/tax).

## tax [CALLS=... TAXES=... WORKLOADS=... REPEATS=2]: each tax's ns per call (three boots of VARIANT=tax), then each workload under each tax
# The tax variant unless VARIANT is given: the stock kernel has no audit,
# no BPF syscall and no mitigation compiled in.
TAX_VARIANT = $(if $(filter file,$(origin VARIANT)),tax,$(VARIANT))
tax: setup
	VARIANT=$(TAX_VARIANT) $(call lab_run,userspace/tax)

.PHONY: tax
