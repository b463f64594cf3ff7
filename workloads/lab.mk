# Workload sweeps against added system-call latency (workloads/).

## sweep W=kbuild|grep|apache|redis|cmd|all [JOBS=N] [SWEEP_ARGS='-l 0:700:100 -r 2'] [CMD='...']:
##   workload against added syscall latency in the VM, analysed into
##   results/<W>-<time>/; JOBS: VMs at once, each a part of the points
##   (default: the free cores on the virtual clock; lab sweep --vms); CMD:
##   cmd's command, run in the lab's folder (W=cmd CMD='tar cf /dev/null /usr/include')
W ?= apache
# JOBS from the command line also reaches the kernel build of 'setup'
# (scripts/build-kernel.sh reads it): the same cores either way.
sweep: setup
	$(call lab_run,sweep,$(W) $(if $(JOBS),--vms $(JOBS)) $(SWEEP_ARGS) $(if $(CMD),-- $(CMD)))

## here [SWEEP_ARGS='--ns 0:30000:3000 -r 5'] [HERE_CPUS=1]: on this machine's own kernel, no
##   kernel build (root; Linux 5.17 or later with BTF): the packages, the BPF delay, Linux's
##   source for grep, then grep swept through the BPF delay on this CPU (HERE_CPUS, default
##   the last: lab sweep --cpus), analysed into results/grep-<time>/
HERE_CPUS ?= $(shell echo $$(($$(nproc) - 1)))
here: deps venv
	scripts/build-kernel.sh --source-only
	$(MAKE) -C userspace/lib
	$(MAKE) -C userspace/bpfdelay
	$(MAKE) -C workloads
	$(call lab_run,sweep,grep --here --delay bpf --cpus $(HERE_CPUS) $(SWEEP_ARGS))

# The guest tests' small kbuild tree, configured on the host (fast here).
workloads-test-tree: $(KERNEL_IMAGE)
	workloads/kbuild-prepare.sh small build/kbuild-small build/src/linux-source-6.12

# The guest tests' kbuild and grep, staged here (lab sweep --stage-only): the
# guest unpacks them instead of copying the files itself, slowly under TCG.
workloads-test-stage: workloads-test-tree venv
	for w in kbuild grep; do \
		$(VENV)/bin/python -m lablib.sweep.driver $$w --scale small \
			--stage-only build/stage-test || exit 1; done

TEST_PREPARE += workloads-test-tree workloads-test-stage
.PHONY: sweep here workloads-test-tree workloads-test-stage
