"""lablib.rtcompare: the Python of userspace/rtcompare/ (its README.md says what it measures)."""

# Its row of the 'lab' command (lablib.lab).
LAB_COMMAND = {"name": "rtcompare", "summary": "the stock kernel against PREEMPT_RT",
               "runner": "run.sh", "analysers": {"rt-compare": "lablib.rtcompare.analyse"}}
