"""lablib.hookcost: the Python of userspace/hookcost/ (its README.md says what it measures)."""

# Its row of the 'lab' command (lablib.lab).
LAB_COMMAND = {"name": "hookcost", "summary": "what the hooks cost with nothing attached",
               "runner": "run.sh", "analysers": {"hookcost": "lablib.hookcost.analyse"}}
