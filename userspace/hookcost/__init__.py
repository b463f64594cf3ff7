"""lablib.hookcost: the Python of userspace/hookcost/ (its README.md says what it measures)."""
