"""lablib.smp: the Python of userspace/smp/ (its README.md says what it measures)."""
