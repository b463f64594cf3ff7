"""lablib.bpfdelay: the Python of userspace/bpfdelay/ (its README.md says what it measures)."""
