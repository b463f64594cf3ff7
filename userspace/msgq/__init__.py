"""lablib.msgq: the Python of userspace/msgq/ (its README.md says what it measures)."""

# Its row of the 'lab' command (lablib.lab).
LAB_COMMAND = {"name": "msgq", "summary": "the profiled message-queue driver", "runner": "run.sh",
               "analysers": {"msgq-profile": "lablib.msgq.analyse", "msgq": "lablib.msgq.analyse"}}
