# What the syscall hook costs (userspace/hookcost).

## bench-hook [BOOTS=3 ROUNDS=5]: null-syscall cost with the hook compiled out, idle, loops=0, 1
bench-hook: setup
	$(call lab_run,hookcost)

BENCH_TARGETS += bench-hook
.PHONY: bench-hook
