"""Readers of the foreign tools' output: perf stat, rt-tests' JSON,
ftrace's and trace-cmd's text, strace's log.  One reader per format; the
experiments read these through here."""
