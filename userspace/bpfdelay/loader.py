"""The BPF delay's loader (userspace/bpfdelay/bpfdelay) driven from Python:
started with its options, its first line awaited, its statistics read
(SIGUSR1 for those so far, SIGTERM for the final ones).  The measurement,
the tests and the sweep's source of delay all start it through Loader."""
import json
import os
import select
import signal
import subprocess
from pathlib import Path

from lablib.host import cgroup2_mount

LOADER = Path(__file__).resolve().parent / "bpfdelay"


class Refused(Exception):
    """The loader exited or said something else than that it attached;
    the message is its line."""


def cannot_run(timeout=30):
    """Why this machine cannot run the BPF delay, in one line (the
    loader's own where it refuses), or None: for the tests to skip by."""
    if os.geteuid() != 0:
        return "loading BPF programs needs root"
    if not LOADER.exists():
        return "userspace/bpfdelay is not built (make userspace; a kernel with BTF)"
    if cgroup2_mount() is None:
        return "no cgroup2 mount on this machine"
    try:
        with Loader("--ns", "0", timeout=timeout):
            pass
    except Refused as e:
        return f"this kernel cannot run the BPF delay: {e}"
    return None


class Loader:
    """bpfdelay attached with @args while the block runs.  Entering waits
    up to @timeout s for its first line (.line) and raises Refused unless
    it attached.  Leaving the block normally stops it and keeps its final
    statistics (.stats); leaving on an exception kills it."""

    def __init__(self, *args, loader=LOADER, timeout=120):
        self.argv = [str(loader), *(str(a) for a in args)]
        self.timeout = timeout
        self.stats = None
        self.line = ""

    def __enter__(self):
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, bufsize=1)
        ready, _, _ = select.select([self.proc.stderr], [], [], self.timeout)
        self.line = self.proc.stderr.readline().strip() if ready else \
            f"bpfdelay said nothing in {self.timeout} s"
        if "attached" not in self.line:
            self.kill()
            raise Refused(self.line)
        return self

    def _answer(self, to):
        """The loader's next line on stdout, once it has said one (Refused
        after @timeout s: no answer @to)."""
        ready, _, _ = select.select([self.proc.stdout], [], [], self.timeout)
        if not ready:
            raise Refused(f"no answer to {to} in {self.timeout} s")
        return self.proc.stdout.readline().rstrip("\n")

    def usr1(self):
        """The statistics so far (SIGUSR1: one JSON line on stdout)."""
        self.proc.send_signal(signal.SIGUSR1)
        return json.loads(self._answer("SIGUSR1"))

    def ask(self, line):
        """One line to a --control loader; its one line of answer."""
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self._answer(repr(line))

    def close(self):
        """The end of a --control loader's input, which detaches it; its
        final statistics (communicate() closes it)."""
        return self._final()

    def stop(self):
        """SIGTERM, then the final statistics; Refused if it failed."""
        self.proc.terminate()
        return self._final()

    def _final(self):
        out, err = self.proc.communicate(timeout=self.timeout)
        if self.proc.returncode != 0 or not out.strip():
            raise Refused(f"bpfdelay ended with status {self.proc.returncode}: "
                          f"{err.strip()}")
        self.stats = json.loads(out.splitlines()[-1])
        return self.stats

    def kill(self):
        """SIGKILL if it still runs; reaped."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate()

    def __exit__(self, kind, *exc):
        if self.proc.poll() is None and kind is None:
            self.stop()
        else:
            self.kill()
