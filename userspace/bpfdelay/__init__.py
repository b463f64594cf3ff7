"""lablib.bpfdelay: the Python of userspace/bpfdelay/ (its README.md says what it measures)."""

# Its row of the 'lab' command (lablib.lab).
LAB_COMMAND = {"name": "bpfdelay",
               "summary": "the BPF delay on the running kernel: its cost and accuracy",
               "main": "lablib.bpfdelay.measure:main"}
