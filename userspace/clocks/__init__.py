"""lablib.clocks: the Python of userspace/clocks/ (its README.md says what it measures)."""

# Its row of the 'lab' command (lablib.lab).
LAB_COMMAND = {"name": "clocks", "summary": "the headline figures under both clocks",
               "runner": "run.sh"}
