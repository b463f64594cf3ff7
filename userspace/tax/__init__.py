"""lablib.tax: the Python of userspace/tax/ (its README.md says what it measures)."""
