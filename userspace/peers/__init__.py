"""lablib.peers: the Python of userspace/peers/ (its README.md says what it measures)."""

# Its row of the 'lab' command (lablib.lab).
LAB_COMMAND = {"name": "peers", "summary": "the delay against other ways to slow system calls",
               "runner": "run.sh", "analysers": {"peers": "lablib.peers.analyse"}}
