"""lablib.peers: the Python of userspace/peers/ (its README.md says what it measures)."""
