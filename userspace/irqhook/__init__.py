"""lablib.irqhook: the Python of userspace/irqhook/ (its README.md says what it measures)."""

# Its row of the 'lab' command (lablib.lab).
LAB_COMMAND = {"name": "irqhook", "summary": "wake-up and switching time through /dev/irqhook",
               "runner": "run.sh",
               "analysers": {"irqhook-sweep": "lablib.irqhook.sweep_report",
                             "irqhook": "lablib.irqhook.analyse"}}
