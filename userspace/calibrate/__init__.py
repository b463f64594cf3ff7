"""lablib.calibrate: the Python of userspace/calibrate/ (its README.md says what it measures)."""
