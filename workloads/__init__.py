"""lablib.sweep: the Python of workloads/ (its README.md says what it measures)."""
