# The lab's delay beside strace and perf (userspace/peers).

## bench-peers [N=10000 WARMUP=1000]: per-call latency under no tool, delay, strace, perf, in one boot
bench-peers: setup
	$(call lab_run,peers)

BENCH_TARGETS += bench-peers
.PHONY: bench-peers
