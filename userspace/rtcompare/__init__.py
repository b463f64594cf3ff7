"""lablib.rtcompare: the Python of userspace/rtcompare/ (its README.md says what it measures)."""
