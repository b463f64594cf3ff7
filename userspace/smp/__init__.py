"""lablib.smp: the Python of userspace/smp/ (its README.md says what it measures)."""

# Its row of the 'lab' command (lablib.lab).
LAB_COMMAND = {"name": "smp",
               "summary": "SMP micro-benchmarks (pipes, futex, TLB shootdown, timers)",
               "runner": "run.sh", "analysers": {"smp": "lablib.smp.analyse"}}
