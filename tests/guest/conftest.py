"""Fixtures for the tests that run inside the patched kernel (make test
boots it with scripts/vm.sh).  Each test starts and ends with the delay
module unloaded."""
import ctypes
import multiprocessing
import os
import pathlib
import re
import subprocess
import time
import typing

import pytest
from lablib.host import cgroup2_mount

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODDIR = pathlib.Path("/sys/module/delay")
LOOPS = MODDIR / "parameters/loops"
NS = MODDIR / "parameters/ns"
SYSCALLS = MODDIR / "parameters/syscalls"
STATS = MODDIR / "stats"
GETPPID, GETPID, WRITEV = 110, 39, 20   # x86_64 numbers
TRACEFS = pathlib.Path("/sys/kernel/tracing")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "timing: asserts a time; make test runs it under the virtual clock, "
        "make test-timing runs these alone, again and again, in one boot")


def on_lab_kernel():
    try:
        return " syscall_hook_register\n" in open("/proc/kallsyms").read()
    except OSError:
        return False


def pytest_collection_modifyitems(config, items):
    if not on_lab_kernel():
        # Not a skip: run outside the VM these tests would prove nothing.
        pytest.exit("tests/guest must run inside the lab kernel: use 'make test'", 2)


def booted_variant():
    """What scripts/vm.sh booted (lab.variant= on the kernel command line)."""
    m = re.search(r"\blab\.variant=(\S+)", pathlib.Path("/proc/cmdline").read_text())
    return m[1] if m else None


def ko(name):
    """A lab module built for the running kernel (make module VARIANT=...)."""
    path = ROOT / "build/modules" / os.uname().release / f"{name}.ko"
    assert path.exists(), f"{path} is not built: run 'make module'"
    return path


# The module calls, made from this process as insmod and rmmod make them:
# starting rmmod took 4-5 s on the debug kernel, the call itself 0.6-1.7 s,
# and the racing-unload tests make hundreds of them.
SYS_FINIT_MODULE = 313                 # x86_64
SYS_DELETE_MODULE = 176
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def finit_module(fd, params=b""):
    """finit_module(2) of the module in @fd with @params (bytes); 0 or the
    errno."""
    ret = libc.syscall(ctypes.c_long(SYS_FINIT_MODULE), ctypes.c_int(fd),
                       ctypes.c_char_p(params), ctypes.c_int(0))
    return ctypes.get_errno() if ret != 0 else 0


def delete_module(name):
    """delete_module(2) with O_NONBLOCK, as rmmod calls it; 0 or the errno
    (EWOULDBLOCK while the module is in use)."""
    ret = libc.syscall(ctypes.c_long(SYS_DELETE_MODULE), ctypes.c_char_p(name.encode()),
                       ctypes.c_int(os.O_NONBLOCK))
    return ctypes.get_errno() if ret != 0 else 0


class ModuleCall(typing.NamedTuple):
    """What insmod() or rmmod() did: errno 0, or the call's errno."""
    what: str
    errno: int

    @property
    def returncode(self):
        return self.errno

    def __str__(self):
        return f"{self.what}: {os.strerror(self.errno) if self.errno else 'done'}"


def _done(call, check):
    if check and call.errno:
        raise OSError(call.errno, str(call))
    return call


def insmod(name="delay", *params, check=True):
    """Load lab module @name with @params ("key=value" each)."""
    fd = os.open(ko(name), os.O_RDONLY | os.O_CLOEXEC)
    try:
        err = finit_module(fd, " ".join(params).encode())
    finally:
        os.close(fd)
    return _done(ModuleCall(" ".join(["insmod", name, *params]), err), check)


def rmmod(name="delay", check=True):
    return _done(ModuleCall(f"rmmod {name}", delete_module(name)), check)


def write_param(value, path=LOOPS):
    """Write like 'echo -n value > path'; returns 0 or the errno of the
    open or the write.  Never O_CREAT: while a module is loaded or
    unloaded its parameters/ directory can be there without the file,
    and creating a file in sysfs fails with EACCES, not ENOENT."""
    try:
        fd = os.open(path, os.O_WRONLY)
    except OSError as e:
        return e.errno
    try:
        os.write(fd, value.encode())
        return 0
    except OSError as e:
        return e.errno
    finally:
        os.close(fd)


def hammer(stop):
    """Make null system calls until @stop (a multiprocessing.Event) is set,
    at the lowest priority: the hammers take every moment the test's own
    process leaves, and none it wants."""
    os.nice(19)
    while not stop.is_set():
        for _ in range(1000):
            os.getppid()
            try:
                os.close(100)
            except OSError:
                pass


def cycle_under_load(cycles, one_cycle, workers=2):
    """Call one_cycle(i) for i in range(cycles) while @workers processes
    make null system calls without pause (hammer), then check that they all
    survived, the module is gone and the kernel logged nothing bad."""
    stop = multiprocessing.Event()
    procs = [multiprocessing.Process(target=hammer, args=(stop,)) for _ in range(workers)]
    for p in procs:
        p.start()
    try:
        for i in range(cycles):
            one_cycle(i)
    finally:
        stop.set()
        for p in procs:
            p.join(timeout=30)
    assert all(p.exitcode == 0 for p in procs)
    assert not MODDIR.exists()
    assert kernel_problems() == []


def read_int(path):
    return int(pathlib.Path(path).read_text())


def delay_stat(name):
    """The delay module's stats/@name."""
    return read_int(STATS / name)


def task_state(tid):
    """Task @tid's state letter from /proc/TID/stat (R, S, D, I ...)."""
    return pathlib.Path(f"/proc/{tid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def kernel_stack(tid):
    """Task @tid's kernel stack (/proc/TID/stack: one function a line) while
    it sleeps, "" while it runs, None once it is gone."""
    try:
        state = task_state(tid)
        return pathlib.Path(f"/proc/{tid}/stack").read_text() if state in "SD" else ""
    except (FileNotFoundError, ProcessLookupError):
        return None


def wait_asleep(tid, *where, timeout=60):
    """Wait until task @tid sleeps with every one of @where on its kernel
    stack (function names such as "irqhook_read"; the stack leaves out the
    scheduler's and the locks' own functions). A task that never gets
    there fails the test after @timeout s: that bounds nothing but a lost
    task."""
    deadline = time.monotonic() + timeout
    while True:
        stack = kernel_stack(tid)
        if stack is None:
            pytest.fail(f"task {tid} ended while we waited for it to sleep in {where}")
        if all(w in stack for w in where):
            return stack
        if time.monotonic() > deadline:
            pytest.fail(f"task {tid} did not sleep in {where} within {timeout} s:\n{stack}")
        time.sleep(0.01)


# What any kernel, and the debug variant's checkers, say when something is
# wrong: oopses and warnings (lockdep's and DEBUG_OBJECTS' among them),
# KASAN's "BUG: KASAN:", UBSAN's reports, SLUB's "BUG kmalloc-64 (...)",
# list corruption, kmemleak's suspects.
BAD_KERNEL_LINE = re.compile(r"Oops|BUG:|WARNING:|soft lockup|hard LOCKUP|rcu.*stall|"
                             r"blocked for more than|general protection|Call Trace|"
                             r"UBSAN:|KASAN|BUG \S+ \(|[Cc]orruption|kmemleak:.*leak|"
                             r"ODEBUG:|possible (circular|recursive) locking|"
                             r"Poison overwritten|Redzone|Object padding")
_test_marker = None
_test_count = 0


@pytest.fixture(autouse=True)
def kernel_log_window(request):
    """Mark each test's start in the kernel log, so that kernel_problems()
    looks at what the kernel said during this test only: one oops fails the
    test that caused it, not every later one."""
    global _test_marker, _test_count
    _test_count += 1
    # The kernel takes lines of up to 1 kB: a long test id is cut.
    _test_marker = f"lab-test: start {_test_count} {request.node.nodeid[:200]}"
    with open("/dev/kmsg", "w") as kmsg:
        kmsg.write(_test_marker + "\n")
    yield


def kernel_log_since_test_start():
    log = subprocess.run(["dmesg"], capture_output=True, text=True, check=True).stdout
    lines = log.splitlines()
    starts = [i for i, ln in enumerate(lines) if ln.endswith(_test_marker or "\0")]
    return lines[starts[-1] + 1:] if starts else lines


KMEMLEAK_REPORT = pathlib.Path("/sys/kernel/debug/kmemleak")


def kmemleak_scan():
    """kmemleak's report after two scans (an object is reported once it
    is older than 5 s and unchanged between two scans), then cleared:
    each caller sees only what is new since the last."""
    time.sleep(5)
    for _ in range(2):
        KMEMLEAK_REPORT.write_text("scan")
    report = KMEMLEAK_REPORT.read_text()
    KMEMLEAK_REPORT.write_text("clear")
    return report


@pytest.fixture(scope="session", autouse=True)
def kmemleak_by_hand():
    """On a kernel with kmemleak (the debug variant), no scan of its own
    every 10 minutes: such a scan reported a leak in whatever test was
    running then, not in the one that leaked.  What boot left is not ours.
    The lab's debug kernel has no scan thread (config/variants/debug.config);
    on one that has, this waits for a scan in progress to end."""
    if KMEMLEAK_REPORT.exists():
        KMEMLEAK_REPORT.write_text("scan=off")
        KMEMLEAK_REPORT.write_text("clear")
    yield


@pytest.fixture(scope="module", autouse=True)
def no_leak_in_this_file(request):
    """After each test file, on a kernel with kmemleak: nothing leaked.  A
    leak fails the file that made it, with kmemleak's report (what,
    allocated where)."""
    yield
    if KMEMLEAK_REPORT.exists():
        report = kmemleak_scan()
        assert report == "", f"{request.node.name} leaked:\n{report[:6000]}"


def kernel_problems():
    """Lines the kernel logged during the current test that say it went
    wrong; after a kmemleak line, kmemleak's report itself (what leaked,
    from which call chain), which the log does not carry."""
    found = [ln for ln in kernel_log_since_test_start() if BAD_KERNEL_LINE.search(ln)]
    if any("kmemleak" in ln for ln in found):
        try:
            found += KMEMLEAK_REPORT.read_text().splitlines()[:60]
        except OSError:
            pass
    return found


@pytest.fixture
def clean_module():
    if MODDIR.exists():
        rmmod()
    yield
    if MODDIR.exists():
        rmmod(check=False)
    if pathlib.Path("/sys/module/hooktest").exists():
        rmmod("hooktest", check=False)


@pytest.fixture
def delay(clean_module):
    insmod()
    return MODDIR


@pytest.fixture
def only_this_process(delay):
    """The module's target: a cgroup with this process alone in it, so
    that its counters count this process's calls and no other task's (a
    getppid from anything else on a freshly booted guest once made 2,001
    of 2,000).  This process goes back to its own cgroup afterwards."""
    root = cgroup2_root()
    home = root / open("/proc/self/cgroup").read().strip().split("::", 1)[1].lstrip("/")
    own = root / f"labtest-{os.getpid()}-own"
    own.mkdir()
    (own / "cgroup.procs").write_text(str(os.getpid()))
    try:
        assert write_param("/" + own.name, MODDIR / "parameters/cgroup") == 0
        yield
        if MODDIR.exists():     # a test may have unloaded it
            assert write_param("\n", MODDIR / "parameters/cgroup") == 0
    finally:
        (home / "cgroup.procs").write_text(str(os.getpid()))
        own.rmdir()


def cgroup2_root():
    mount = cgroup2_mount()
    if mount is None:
        pytest.fail("cgroup2 is not mounted")
    return mount


def dying_cgroups(under):
    """Removed cgroups below @under that are not yet freed. Counted under a
    parent of the test's own, so what other tests or the system left dying
    elsewhere cannot change it."""
    stats = dict(line.split() for line in (under / "cgroup.stat").read_text().splitlines())
    return int(stats["nr_dying_descendants"])


def wait_for_no_dying(under, timeout=30):
    """dying_cgroups(@under) once it is 0, or its last value. A removed
    cgroup dies after an RCU grace period and its last put; one that keeps
    a reference stays dying for good."""
    deadline = time.monotonic() + timeout
    while (n := dying_cgroups(under)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return n


@pytest.fixture
def scratch_cgroups(clean_module):
    """A parent cgroup /labtest-<pid>-scratch and two fresh children a and b in it:
    (parent, [a, b]). All are removed afterwards, whatever the test left."""
    parent = cgroup2_root() / f"labtest-{os.getpid()}-scratch"
    dirs = [parent / x for x in "ab"]
    for d in dirs:
        d.mkdir(parents=True)
    yield parent, dirs
    for d in dirs + [parent]:
        if d.exists():
            d.rmdir()


# --- fault injection (tests/guest/faultwalk.py) -----------------------------------------
FAIL_NTH = pathlib.Path("/proc/thread-self/fail-nth")
DEBUGFS = pathlib.Path("/sys/kernel/debug")
# GFP_KERNEL allocations (those that may sleep) must fail too, highmem or
# not, and a failure is said by its error, not by a stack dump each.
INJECTION_SETTINGS = {
    "failslab/ignore-gfp-wait": "N",
    "failslab/verbose": "0",
    "fail_page_alloc/ignore-gfp-wait": "N",
    "fail_page_alloc/ignore-gfp-highmem": "N",
    "fail_page_alloc/verbose": "0",
}
MODPROBE = pathlib.Path("/proc/sys/kernel/modprobe")
SLAB = pathlib.Path("/sys/kernel/slab")
# The checkers' own caches, left out of the walks by failslab's cache
# filter: kmemleak's record of every allocation and debugobjects' pool.  A
# failure there falls back to a reserve and never reaches the caller, and
# every allocation the lab's code made was two points of a walk, one of
# them kmemleak's (a msgq load walk loaded despite the fault 386 times and
# failed 78 times in its first 464 steps).
CHECKER_CACHES = {"kmemleak_object", "kmemleak_scan_area", "debug_objects_cache"}


def walked_caches():
    """The slab caches a walk fails (all but the checkers'; not the
    aliases, which are links to the cache they were merged into)."""
    return sorted(d for d in SLAB.iterdir() if not d.is_symlink() and d.name not in CHECKER_CACHES)


def caches_left_out():
    """Caches made after fault_injection set the filter up, which no walk
    fails: empty, or a walk missed their allocations."""
    if (DEBUGFS / "failslab/cache-filter").read_text().strip() != "Y":
        return []
    return [d.name for d in walked_caches() if (d / "failslab").read_text().strip() != "1"]
# The lab's modules (modules/*/Kbuild), each unloaded around a walk.
LAB_MODULES = sorted(p.parent.name for p in (ROOT / "modules").glob("*/Kbuild"))


@pytest.fixture(scope="module")
def fault_injection():
    """fail-nth is there and set up as above; the settings are put back."""
    if not FAIL_NTH.exists():
        # make test-debug runs this file on the debug kernel to prove the
        # error paths: there, a missing fail-nth is a lost option.
        assert booted_variant() != "debug", \
            "the debug kernel has no fail-nth: FAULT_INJECTION is gone from its config"
        pytest.skip("no fault injection in this kernel (the debug variant has it: "
                    "make test-debug)")
    old = {}
    for name, value in INJECTION_SETTINGS.items():
        path = DEBUGFS / name
        old[name] = path.read_text().strip()
        path.write_text(value)
    # No module autoloading meanwhile: an open of a device node whose
    # numbers no cdev serves yet (msgq's, between its devices and its cdev,
    # where a walk's opener races each load) asks for char-major-M-N, and
    # each modprobe took 10-14 s in the debug guest: with an
    # empty path the kernel refuses at once and the open is -ENXIO.
    modprobe = MODPROBE.read_text().rstrip("\n")
    MODPROBE.write_text("\n")
    caches = walked_caches() if SLAB.is_dir() else []    # no sysfs of SLUB: walk them all
    for d in caches:
        try:
            (d / "failslab").write_text("1")
        except OSError as e:
            # A cache merged with others takes no flag of its own; the
            # debug variant (SLUB_DEBUG_ON) merges none.
            pytest.fail(f"cannot put slab cache {d.name} in the walks: {e}")
    if caches:
        (DEBUGFS / "failslab/cache-filter").write_text("Y")
    yield
    (DEBUGFS / "failslab/cache-filter").write_text("N")
    for d in caches:
        (d / "failslab").write_text("0")
    MODPROBE.write_text(modprobe + "\n")
    for name, value in old.items():
        (DEBUGFS / name).write_text(value)


@pytest.fixture
def scratch_cgroup():
    """A cgroup for delay to target, in a parent of its own: afterwards it
    is removed, and dies (no reference to it was left)."""
    parent = cgroup2_root() / f"labtest-{os.getpid()}-faultinject"
    target = parent / "target"
    target.mkdir(parents=True)
    yield "/" + str(target.relative_to(cgroup2_root()))
    target.rmdir()
    assert wait_for_no_dying(parent) == 0, "a failed load kept the cgroup"
    parent.rmdir()


@pytest.fixture
def no_module_loaded():
    """No lab module loaded before the test, none left after it."""
    for name in LAB_MODULES:
        if (pathlib.Path("/sys/module") / name).exists():
            rmmod(name)
    yield
    for name in LAB_MODULES:
        if (pathlib.Path("/sys/module") / name).exists():
            rmmod(name, check=False)
