"""lablib.tax: the Python of userspace/tax/ (its README.md says what it measures)."""

# Its row of the 'lab' command (lablib.lab).
LAB_COMMAND = {"name": "tax",
               "summary": "what seccomp, audit, tracers and mitigations add to each call",
               "runner": "run.sh", "analysers": {"tax": "lablib.tax.analyse"}}
