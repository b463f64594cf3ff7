"""The fault-injection walks of make test-debug's faults pass (issue 26),
shared by test_faultinject.py (delay, /dev/irqhook, delay's parameters)
and each experiment's own test_<experiment>_faultinject.py: every
allocation the lab's code makes on a module load, a device open, read or
write and a parameter write is made to fail, one at a time, and each
failure must be an error and nothing else.

The kernel's fail-nth (/proc/thread-self/fail-nth, FAULT_INJECTION on the
debug variant: make test-debug) fails the n-th fault-injection point the
writing thread passes, in its next system calls: failslab covers kmalloc
and the slab caches, fail_page_alloc the page allocator above order 0 (a
kmalloc above 8 KiB, msgq's rings at a large capacity).  Order-0 pages
are left alone (fail_page_alloc's min-order stays 1): vmalloc takes them
one at a time, thousands for msgq's static buffers and the module's own
memory, through the one error path their first one takes already.  So are
the checkers' own slab caches (conftest.CHECKER_CACHES: kmemleak's records,
debugobjects' pool), whose failures fall back to a reserve.

For n = 1, 2, ... until a load passes n points without a fault, a walk
loads the module with the n-th point failed (walk_load).  Every failing
load must fail with an error (a load that fails where no fault was
injected is something an earlier failure left behind), leave no module,
device or cgroup reference behind, and the kernel may say nothing but the
allocation failure itself; kmemleak is scanned every SCAN_EVERY steps and
at the end of each walk.  An Opener may race each load, opening a device
of the module again and again and holding what it gets until the load
returned (issue 26 item 5: a file opened on a device of a load that then
failed pointed into the freed module).  walk_calls walks some system
calls the same way (device_walk: open, write, read and close a device):
each call returns or fails cleanly, and afterwards everything works and
nothing leaked.

Each walk prints how many points it passed (pytest -s) and records it as
a property of its test (pytest --junitxml)."""
import collections
import errno
import multiprocessing
import os
import pathlib
import re
import struct

import pytest
from conftest import (BAD_KERNEL_LINE, FAIL_NTH, KMEMLEAK_REPORT, caches_left_out,
                      delete_module, finit_module, kmemleak_scan, ko)

SCAN_EVERY = 60                        # steps between kmemleak scans
MAX_STEPS = 3000                       # a walk that gets here never ends
MSG = struct.pack("<II", 1, 2) + b"fault injection"


class FailNth:
    """The calling thread's fail-nth, open for good: setting and reading
    it costs one system call and no allocation."""

    def __init__(self):
        self.fd = os.open(FAIL_NTH, os.O_RDWR)

    def arm(self, n):
        os.pwrite(self.fd, str(n).encode(), 0)

    def disarm(self):
        """Whether the armed fault was injected (the count ran down to 0),
        and the count set back to 0 so that no later call fails."""
        left = int(os.pread(self.fd, 32, 0))
        os.pwrite(self.fd, b"0", 0)
        return left == 0

    def close(self):
        os.close(self.fd)


class KernelLog:
    """What the kernel logs from now on, read from /dev/kmsg as it comes
    (one record per read): dmesg would read the whole buffer at each step,
    and a walk's steps could push a test's start out of it."""

    def __init__(self):
        self.fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
        os.lseek(self.fd, 0, os.SEEK_END)
        self.lost = 0

    def new_lines(self):
        lines = []
        while True:
            try:
                record = os.read(self.fd, 8192).decode(errors="replace")
            except BlockingIOError:
                return lines
            except BrokenPipeError:      # records overwritten before we read them
                self.lost += 1
                continue
            lines.append(record.split(";", 1)[-1].split("\n", 1)[0])

    def close(self):
        os.close(self.fd)


# A report of an allocation that failed, as it must when it was made to:
# the page allocator's and vmalloc's warning, with a stack dump after it.
ALLOCATION_FAILURE = re.compile(r"page allocation failure|vmalloc error:|"
                                r"FAULT_INJECTION: forcing a failure")


# The core's trace-event code on a failed allocation, when it adds a
# module's events (6.12.117): event_define_fields warns that a field could
# not be defined, and the event file that this leaves half made is put once
# too often when the module goes (event_file_put warns).  Both are in
# kernel/trace/trace_events.c, on paths no module can choose (seen on the
# delay walk): the core's, not the lab's, so a walk counts them
# and goes on.  Any other warning, a leak or KASAN's word still fails it.
CORE_TRACE_EVENT_REPORT = re.compile(r"WARNING: .* at \S*kernel/trace/trace_events\.c:\d+ "
                                     r"(event_define_fields|event_file_put)\+")
END_OF_REPORT = "---[ end trace"


def problems(lines):
    """(@lines that say something went wrong, how many core trace-event
    reports there were).  An allocation failure's own report is no
    problem, nor the "Call Trace:" of its stack dump (the next one after
    it); any other line of it that looks bad still is.  A core trace-event
    report (above) is skipped whole, to its end-of-trace line."""
    found, after_failure, in_core_report, core_reports = [], False, False, 0
    for line in lines:
        if in_core_report:
            in_core_report = END_OF_REPORT not in line
        elif CORE_TRACE_EVENT_REPORT.search(line):
            in_core_report = True
            core_reports += 1
        elif ALLOCATION_FAILURE.search(line):
            after_failure = True
        elif after_failure and "Call Trace:" in line:
            after_failure = False
        elif BAD_KERNEL_LINE.search(line):
            found.append(line)
    return found, core_reports


class Walk:
    """One walk: its steps' outcomes, the kernel's log and leak checks."""

    def __init__(self, what):
        self.what = what
        self.steps = 0
        self.outcomes = collections.Counter()
        self.injected_but_passed = []
        self.core_reports = []           # steps with a core trace-event report
        self.log = KernelLog()
        self.fail_nth = FailNth()

    def check(self, step, scan=False):
        bad, core_reports = problems(self.log.new_lines())
        self.core_reports += [step] * core_reports
        assert bad == [], f"{self.what}, step {step}: the kernel said\n" + "\n".join(bad[:60])
        if scan and KMEMLEAK_REPORT.exists():
            leaks = kmemleak_scan()
            assert leaks == "", f"{self.what}, by step {step}: kmemleak\n{leaks[:6000]}"

    def finish(self, record_property):
        self.check(self.steps, scan=True)
        missed = caches_left_out()
        assert missed == [], f"{self.what}: slab caches made during the walk, not in it: {missed}"
        assert self.log.lost == 0, f"{self.what}: {self.log.lost} kernel log records lost"
        self.log.close()
        self.fail_nth.close()
        summary = (f"{self.what}: {self.steps} fault-injection points, outcomes "
                   f"{dict(self.outcomes)}, a fault injected and the call passed at "
                   f"{self.injected_but_passed or 'none'}, core trace-event reports at "
                   f"{self.core_reports or 'none'}")
        print(summary)
        record_property("fault_injection_points", self.steps)
        record_property("summary", summary)
        return self.steps


def unload(name):
    err = delete_module(name)
    if err:
        raise OSError(err, f"delete_module({name}): {os.strerror(err)}")


def walk_load(walk, name, params, works, opener=None):
    """Load module @name with @params, the n-th fault-injection point of
    finit_module failed, for n = 1, 2, ... until a load passes them all.
    @works(n) checks a loaded module; @opener races each load."""
    sysdir = pathlib.Path("/sys/module") / name
    # The module from memory (a memfd), not from its file: the walk is of
    # the load, not of the file system the file is on.  From the guest's
    # 9p share it failed the file system's read too, where netfs (6.12.117)
    # puts a request once too often on an allocation failure
    # (netfs_unbuffered_read_iter_locked: "refcount_t: underflow").
    fd = os.memfd_create(name, os.MFD_CLOEXEC)
    os.write(fd, ko(name).read_bytes())
    try:
        walk_steps(walk, name, sysdir, fd, params.encode(), works, opener)
    finally:
        os.close(fd)


def walk_steps(walk, name, sysdir, fd, params, works, opener):
    for n in range(1, MAX_STEPS):
        if opener:
            opener.start()
        walk.fail_nth.arm(n)
        err = finit_module(fd, params)
        injected = walk.fail_nth.disarm()
        if opener:
            opener.stop()
        if err == 0:
            works(n)
            unload(name)
            if not injected:
                walk.steps = n - 1
                walk.outcomes["loaded"] += 1
                return
            walk.injected_but_passed.append(n)
            walk.outcomes["loaded despite the fault"] += 1
        else:
            assert injected, (f"load {n} of {name} failed with {errno.errorcode[err]} "
                              "where no fault was injected: the failure before left "
                              "something behind")
            assert not sysdir.exists(), f"a failed load {n} left {sysdir}"
            walk.outcomes[errno.errorcode[err]] += 1
        walk.check(n, scan=n % SCAN_EVERY == 0)
    pytest.fail(f"{walk.what}: no end after {MAX_STEPS} steps")


def walk_calls(walk, calls, works):
    """@calls() (some system calls that may each fail) with their n-th
    fault-injection point failed, for n = 1, 2, ... until they pass them
    all; @works(n) checks that everything still works after each."""
    for n in range(1, MAX_STEPS):
        walk.fail_nth.arm(n)
        try:
            outcome = calls()
        finally:
            injected = walk.fail_nth.disarm()
        works(n)
        walk.outcomes[outcome] += 1
        if not injected:
            walk.steps = n - 1
            return
        walk.check(n, scan=n % SCAN_EVERY == 0)
    pytest.fail(f"{walk.what}: no end after {MAX_STEPS} steps")


def attempt(call, *args):
    """A system call's result, or its errno's name if it failed."""
    try:
        return call(*args)
    except OSError as e:
        return errno.errorcode[e.errno]


def opener_loop(conn, paths):
    """In a process of its own: between 'go' and 'stop', open @paths again
    and again and keep every file that opened; after 'stop', read from
    each and close it, and answer how many there were."""
    while conn.recv() == "go":
        held = []
        while not conn.poll():
            for p in paths:
                try:
                    held.append(os.open(p, os.O_RDWR | os.O_NONBLOCK))
                except OSError:
                    pass
        conn.recv()                      # 'stop': the load has returned
        for fd in held:
            try:
                os.read(fd, 8192)
            except OSError:
                pass
            os.close(fd)
        conn.send(len(held))


class Opener:
    """The process of opener_loop, driven one load at a time."""

    def __init__(self, paths):
        self.conn, child = multiprocessing.Pipe()
        self.proc = multiprocessing.Process(target=opener_loop, args=(child, paths))
        self.proc.start()
        self.opened = 0
        self.loads_with_a_file = 0

    def start(self):
        self.conn.send("go")

    def stop(self):
        self.conn.send("stop")
        assert self.conn.poll(60), "the opener died or hangs (see the kernel log)"
        held = self.conn.recv()
        self.opened += held
        self.loads_with_a_file += held > 0

    def close(self):
        self.conn.send("exit")
        self.proc.join(30)
        assert self.proc.exitcode == 0


def device_walk(device, size, works, record_property):
    """Open @device, write one message (@MSG), read @size bytes back and
    close, each allocation failed in turn; after each step the device is
    drained and @works(n) checks that it still works."""
    def calls():
        fd = attempt(os.open, device, os.O_RDWR | os.O_NONBLOCK)
        if isinstance(fd, str):
            return f"open {fd}"
        try:
            w = attempt(os.write, fd, MSG)
            r = attempt(os.read, fd, size)
        finally:
            os.close(fd)
        return f"write {'ok' if w == len(MSG) else w}, read {r if isinstance(r, str) else 'ok'}"

    def drain():
        fd = os.open(device, os.O_RDWR | os.O_NONBLOCK)
        try:
            while attempt(os.read, fd, size) != "EAGAIN":
                pass
        finally:
            os.close(fd)

    def drained_and_works(n):
        drain()
        works(n)

    drain()
    walk = Walk(f"open, write, read and close {device}")
    walk_calls(walk, calls, drained_and_works)
    assert walk.finish(record_property) > 0
