"""lablib.irqhook: the Python of userspace/irqhook/ (its README.md says what it measures)."""
