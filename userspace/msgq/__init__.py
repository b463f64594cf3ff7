"""lablib.msgq: the Python of userspace/msgq/ (its README.md says what it measures)."""
