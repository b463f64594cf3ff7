"""lablib.tailamp: the Python of userspace/tailamp/ (its README.md says what it measures)."""
