"""A stress and fuzz pass over every interface the lab adds to the kernel:
/dev/irqhook, the msgq module's /dev/bus_* queues, the delay module's
parameters, and the hook's registration (delay against hooktest), all at
once and racing insmod/rmmod cycles of the modules, for a fixed number of
operations from a fixed seed (LAB_STRESS_SEED to replay another).

Nothing may crash or hang, the kernel may report nothing (lockdep, KASAN,
UBSAN, kmemleak, SLUB, list and object debugging on the debug variant:
make test-debug), and the books must balance afterwards: every msgq buffer
freed once its queue is empty, every cgroup reference given back.  It runs
on every variant; the debug kernel is where it proves the most."""
import ctypes
import errno
import multiprocessing
import os
import pathlib
import random
import subprocess
import time

import pytest
from conftest import (KMEMLEAK_REPORT, MODDIR, ROOT, insmod, kernel_problems, kmemleak_scan, rmmod,
                      wait_for_no_dying, write_param)

SEED = int(os.environ.get("LAB_STRESS_SEED", "20261125"))
OPS = 1500               # per worker
CYCLES = 25              # insmod/rmmod rounds of each module
IRQHOOK = "/dev/irqhook"
QUEUES = [f"/dev/{q}" for q in ("bus_in_q", "bus_out_q1", "bus_out_q2", "bus_out_q3")]
MSGQ = pathlib.Path("/sys/module/msgq")
# The msgq experiment's queues join in while the lab has it.
HAVE_MSGQ = (ROOT / "modules/msgq").is_dir()
BAD_POINTERS = [16, 0xFFFF_8000_0000_0000, 0x7FFF_FFFF_F000]

libc = ctypes.CDLL(None, use_errno=True)
libc.read.restype = libc.write.restype = ctypes.c_ssize_t
libc.read.argtypes = libc.write.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t]

# An errno any fuzzed call may end with; anything else fails the worker.
EXPECTED = {errno.EAGAIN, errno.EINVAL, errno.EFAULT, errno.EMSGSIZE, errno.ENOBUFS,
            errno.ENOENT, errno.ENODEV, errno.ENXIO, errno.EINTR, errno.ENOTDIR,
            errno.EBUSY, errno.ENOMEM, errno.ERANGE, errno.EOPNOTSUPP}


def checked(call, *args):
    """Run a system call wrapper; an unexpected errno is raised again."""
    try:
        return call(*args)
    except OSError as e:
        if e.errno not in EXPECTED:
            raise
        return None


def raw(fn, fd, rnd, size):
    """read or write of @size bytes from a good buffer or a bad pointer."""
    if rnd.random() < 0.3:
        ret = fn(fd, ctypes.c_void_p(rnd.choice(BAD_POINTERS)), size)
    else:
        buf = ctypes.create_string_buffer(bytes(rnd.getrandbits(8) for _ in range(min(size, 64)))
                                          .ljust(size, b"\0"), size)
        ret = fn(fd, buf, size)
    if ret < 0 and ctypes.get_errno() not in EXPECTED:
        raise OSError(ctypes.get_errno(), f"{fn.__name__} of {size} bytes")


def fuzz_device(paths, rnd, ops):
    """Random opens, reads and writes of random sizes, good and bad
    buffers, on one of @paths at a time; never blocks (O_NONBLOCK)."""
    fd, done = None, 0
    while done < ops:
        if fd is None or rnd.random() < 0.05:
            if fd is not None:
                os.close(fd)
            fd = checked(os.open, rnd.choice(paths), os.O_RDWR | os.O_NONBLOCK)
            if fd is None:          # msgq is unloaded right now
                time.sleep(0.001)
                done += 1
                continue
        size = rnd.choice([0, 1, 7, 8, 31, 32, 33, 100, 4096, 4104, 5000, 70000])
        raw(libc.write if rnd.random() < 0.5 else libc.read, fd, rnd, size)
        done += 1
    if fd is not None:
        os.close(fd)


PARAM_VALUES = {
    # Not the largest good values: 5 ms on every call of every worker would
    # make the pass last hours.  The largest are tested in test_delay_module.
    "loops": ["0", "1", "100", "1000001", "-1", "abc", "", "0x10", "99999999999"],
    "ns": ["0", "1", "5000", "5000001", "-5", "1e3", "", "\n"],
    "syscalls": ["", "\n", "0", "0-3,39", "110", "0-1000", "5-2", ",", "1,,2", "abc",
                 "0-" + "9" * 30, "3,110\n"],
    "cgroup": ["", "\n", "relative", "/no-such-cgroup", "/cgroup.procs"],
    "delays": ["", "\n", "getppid:1000", "read:5,3:0", "getppid:5000001", "nosuchcall:1",
               "read:1,read:2", ":", "read:"],
    "every": ["0", "1", "3", "-1", "4294967296", "x"],
    "first": ["0", "1", "1000", "-1", "1e3"],
    "ppm": ["0", "500000", "1000000", "1000001", "-1"],
    "seed": ["0", "42", "18446744073709551615", "18446744073709551616", "-1"],
    # Sleeping 5 us a call at most (ns above), at entry or at exit.
    "mode": ["spin", "sleep", "sleep\n", "", "nap", "Spin"],
    "where": ["entry", "exit", "exit\n", "", "middle"],
}


def fuzz_parameters(rnd, ops, cgroups):
    """Random values, good and bad, into every delay parameter."""
    values = dict(PARAM_VALUES, cgroup=PARAM_VALUES["cgroup"] + cgroups)
    for _ in range(ops):
        name = rnd.choice(sorted(values))
        value = rnd.choice(values[name])
        err = write_param(value, MODDIR / "parameters" / name)
        if err and err not in EXPECTED:
            raise OSError(err, f"writing {value!r} to {name}")


def worker(kind, seed, cgroups):
    rnd = random.Random(seed)
    if kind == "irqhook":
        fuzz_device([IRQHOOK], rnd, OPS)
    elif kind == "msgq":
        fuzz_device(QUEUES, rnd, OPS)
    else:
        fuzz_parameters(rnd, OPS, cgroups)


def cycle_modules(rnd):
    """insmod/rmmod rounds of delay (good and bad parameters), hooktest
    and msgq (rmmod refused while a queue is open: that is expected)."""
    for _ in range(CYCLES):
        insmod("delay", rnd.choice(["loops=10", "ns=1000", "syscalls=0-3", "loops=abc",
                                    "cgroup=/no-such", "syscalls=1,x"]), check=False)
        insmod("hooktest", check=False)         # -EBUSY while delay holds the hook
        rmmod("hooktest", check=False)
        if HAVE_MSGQ:
            insmod("msgq", *rnd.choice([["alloc=dynamic"], ["alloc=static"], ["capacity=1"],
                                        ["capacity=4096", "alloc=static"], ["capacity=0"],
                                        ["alloc=x"]]), check=False)
        time.sleep(rnd.random() * 0.05)
        rmmod("delay", check=False)
        if HAVE_MSGQ:
            rmmod("msgq", check=False)


def unload_all():
    for name in ("delay", "hooktest", "msgq"):
        if pathlib.Path(f"/sys/module/{name}").exists():
            rmmod(name)


@pytest.fixture(autouse=True)
def debugfs():
    if not pathlib.Path("/sys/kernel/debug/tracing").exists() and \
            not any(line.split()[2] == "debugfs" for line in open("/proc/mounts")):
        subprocess.run(["mount", "-t", "debugfs", "none", "/sys/kernel/debug"], check=True)


def test_every_interface_under_fuzzing_and_module_cycles(scratch_cgroups):
    parent, dirs = scratch_cgroups
    print(f"seed {SEED} (LAB_STRESS_SEED replays it)")
    unload_all()
    if KMEMLEAK_REPORT.exists():
        KMEMLEAK_REPORT.write_text("clear")   # what came before is not ours
    rnd = random.Random(SEED)
    cgroups = [f"/{parent.name}/{d.name}" for d in dirs]
    kinds = ["irqhook", "irqhook", "params"] + ["msgq", "msgq"] * HAVE_MSGQ
    procs = [multiprocessing.Process(target=worker, args=(k, rnd.getrandbits(32), cgroups))
             for k in kinds]
    for p in procs:
        p.start()
    try:
        cycle_modules(rnd)
    finally:
        for p in procs:
            p.join(timeout=900)
        for p in procs:
            if p.is_alive():
                p.kill()
    assert [p.exitcode for p in procs] == [0] * len(procs), "a worker failed or hung"

    # The books: each queue's buffers come back once it is empty.
    if HAVE_MSGQ:
        insmod("msgq", "alloc=dynamic", check=False)
    for q in QUEUES * HAVE_MSGQ:
        fd = os.open(q, os.O_RDWR | os.O_NONBLOCK)
        try:
            os.write(fd, b"\0" * 8 + b"x" * 100)
            while checked(os.read, fd, 8192):
                pass
        finally:
            os.close(fd)
        stats = pathlib.Path(f"/sys/class/msgq/{q[5:]}/stats")
        assert (stats / "allocated").read_text() == "0\n", q
        assert (stats / "depth").read_text() == "0\n", q
    unload_all()
    with open(IRQHOOK, "rb", buffering=0) as f:
        os.set_blocking(f.fileno(), False)
        while checked(f.read, 32):
            pass
    for d in dirs:
        d.rmdir()
    assert wait_for_no_dying(parent) == 0, "a cgroup reference was kept"

    if KMEMLEAK_REPORT.exists():
        leaks = kmemleak_scan()
        assert leaks == "", leaks[:4000]
    assert kernel_problems() == []
    assert not MODDIR.exists() and not MSGQ.exists()


# What each checker of the debug variant leaves in the running kernel.
DEBUG_SYMBOLS = {"KASAN": "kasan_report", "UBSAN": "__ubsan_handle_out_of_bounds",
                 "lockdep": "lock_acquire", "kmemleak": "kmemleak_scan",
                 "DEBUG_ATOMIC_SLEEP": "__might_sleep", "DEBUG_OBJECTS": "debug_object_init",
                 "DEBUG_LIST": "__list_add_valid_or_report"}


def test_the_debug_kernel_has_its_checkers():
    """make test-debug must run on the kernel that checks: a kernel that
    lost an option would pass everything above and prove nothing."""
    if "-lab-debug" not in os.uname().release:
        pytest.skip("not the debug variant (make test-debug)")
    symbols = {line.split()[2] for line in open("/proc/kallsyms")}
    missing = [name for name, sym in DEBUG_SYMBOLS.items() if sym not in symbols]
    assert missing == []
    assert KMEMLEAK_REPORT.exists(), "kmemleak is off (kmemleak=off, or its pool ran out at boot)"
