"""lablib.tailamp: the Python of userspace/tailamp/ (its README.md says what it measures)."""

# Its row of the 'lab' command (lablib.lab).
LAB_COMMAND = {"name": "tailamp",
               "summary": "how a delay on a few calls amplifies the reply-time tail",
               "runner": "run.sh", "analysers": {"tailamp": "lablib.tailamp.analyse"}}
