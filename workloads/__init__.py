"""lablib.sweep: the Python of workloads/ (its README.md says what it measures)."""

# Its row of the 'lab' command (lablib.lab).
LAB_COMMAND = {"name": "sweep",
               "summary": "a workload's throughput against added system-call latency",
               "main": "lablib.sweep.driver:main"}
