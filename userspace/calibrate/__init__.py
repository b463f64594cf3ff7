"""lablib.calibrate: the Python of userspace/calibrate/ (its README.md says what it measures)."""

# Its row of the 'lab' command (lablib.lab).
LAB_COMMAND = {"name": "calibrate",
               "summary": "loop count -> added system-call latency (the delay module's scale)",
               "runner": "run.sh",
               "analysers": {"calibrate": "lablib.calibrate.analyse",
                             "calibrate-bench": "lablib.calibrate.bench_report"}}
