# The message bus of the msgq module, profiled (userspace/msgq).

## msgq [RUNS=5 N=30000 VARIANT=stock|rt]: both buffer strategies under perf stat and perf record
msgq: setup
	$(call lab_run,msgq)

.PHONY: msgq
