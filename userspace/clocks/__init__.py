"""lablib.clocks: the Python of userspace/clocks/ (its README.md says what it measures)."""
