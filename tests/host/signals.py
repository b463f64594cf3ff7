"""Signalling a runner under test as a terminal does."""
import os
import subprocess


def interrupt(p, sig, group, timeout):
    """Send @sig to the process @p, or to its process group if @group (a
    terminal's Ctrl-C), and wait for it: its (stdout, stderr), or None if
    it had not ended after @timeout s (it is left running)."""
    if group:
        os.killpg(p.pid, sig)
    else:
        p.send_signal(sig)
    try:
        return p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
