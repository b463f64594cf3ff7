"""The BPF delay (userspace/bpfdelay) in the lab kernel's bpf variant
(config/variants/bpf.config), on the virtual clock, where one instruction
is one ns: the kernel has what the loader needs and it attaches; the calls
it counts and delays are exactly the calls made; its fixed cost per call
(a getppid loop with it attached at --ns 0, against the loop alone) and
what a delay of N ns asked costs are the same to the ns in every run; a
delay costs the ns asked and less than a delay of no length more; and the
ns the program measures spinning are at least the ns asked and no more
than what the delay cost the call.

'make test-bpfdelay' builds the variant and runs this file in a boot of
it on the virtual clock; every other boot skips it (make test's included:
a boot of another kernel would add a boot to it).  The host tests
(tests/host/test_bpfdelay.py) run the loader on the build machine's own
kernel, with its options and refusals.  LAB_BPFDELAY names another loader
to test (one built with a fault put in, to see a test fail)."""
import functools
import os
import pathlib
import statistics
import subprocess
import time

import pytest
from conftest import ROOT, booted_variant, cgroup2_root
from lablib.bpfdelay import loader as bpfdelay

DIR = ROOT / "userspace/bpfdelay"
LOADER = pathlib.Path(os.environ.get("LAB_BPFDELAY", bpfdelay.LOADER))
CALLLOOP = DIR / "callloop"
# The loader, given two minutes for its first line: TCG is slow to load a program.
Loader = functools.partial(bpfdelay.Loader, loader=LOADER, timeout=120)
BTF = pathlib.Path("/sys/kernel/btf/vmlinux")
VIRTUAL = "lab.clock=virtual" in pathlib.Path("/proc/cmdline").read_text().split()
# A run: callloop's median of BATCHES batches of CALLS getppid calls.  On
# the virtual clock a batch that no interrupt cut into takes the same
# instructions, and so the same ns, as every other such batch (to the ns
# of the clock's conversion: 0.01 ns a call); batches of 100 calls are
# short enough (0.57 ms at 5,000 ns asked; a tick every 4 ms) that most
# have no tick, so the median is one of them.  Batches of 1,000 calls
# half of which a tick cut into gave medians 1.6 ns apart.
BATCHES, CALLS, WARMUP = 101, 100, 100
MADE = BATCHES * CALLS + WARMUP
ROUNDS = 3
ASKED = [1, 1000, 5000]

pytestmark = pytest.mark.skipif(booted_variant() != "bpf",
                                reason="not the bpf variant (make test-bpfdelay)")
exact = pytest.mark.skipif(not VIRTUAL, reason="exact only on the virtual clock "
                           "(make test-bpfdelay boots it under TCG)")


@pytest.fixture
def target():
    """A cgroup v2 for the loop alone: (its path from the cgroup2 root, its
    folder); removed afterwards."""
    folder = cgroup2_root() / f"bpfdelay-guest-{os.getpid()}"
    folder.mkdir()
    yield "/" + folder.name, folder
    folder.rmdir()


def callloop(folder, batches=BATCHES, calls=CALLS, warmup=WARMUP):
    """getppid in cgroup @folder: callloop's median ns a call."""
    def join():
        (folder / "cgroup.procs").write_text(str(os.getpid()))
    out = subprocess.run([CALLLOOP, "-n", str(batches), "--calls", str(calls),
                          "--warmup", str(warmup)], capture_output=True, text=True,
                         check=True, preexec_fn=join, timeout=600)
    last = out.stdout.split()
    assert last[-2] == "median", out.stdout[-200:]
    return float(last[-1])


def run(folder, name, ns=None):
    """One run: the loop alone (@ns None) or with bpfdelay attached at @ns,
    targeting @name's getppid; (median ns a call, the loader's statistics)."""
    if ns is None:
        return callloop(folder), None
    with Loader("--ns", ns, "--cgroup", name, "--syscalls", "getppid") as loader:
        per_call = callloop(folder)
    return per_call, loader.stats


def test_the_kernel_has_what_the_bpf_delay_needs():
    """The variant is what it says: its release, the kernel's BTF, the JIT
    on; and the host-built loader (the guest's root is the host's) attaches
    at the system-call tracepoint."""
    assert os.uname().release.endswith("-lab-bpf"), os.uname().release
    assert BTF.stat().st_size > 0
    assert pathlib.Path("/proc/sys/net/core/bpf_jit_enable").read_text().strip() == "1"
    assert LOADER.exists() and CALLLOOP.exists(), "make -C userspace/bpfdelay"
    with Loader("--ns", 0) as loader:
        assert "attached at tp_btf/sys_enter" in loader.line, loader.line
    assert loader.stats["delayed"] == 0, loader.stats


@pytest.mark.parametrize("ns", [0, 1000])
def test_the_calls_counted_and_delayed_are_the_calls_made(target, ns):
    """Every getppid of the loop in the target is counted, by name too,
    and delayed when ns is asked; nothing else is (on any clock)."""
    name, folder = target
    made = 3 * 500 + 100
    with Loader("--ns", ns, "--cgroup", name, "--syscalls", "getppid") as loader:
        callloop(folder, batches=3, calls=500, warmup=100)
    stats = loader.stats
    assert stats["calls"] == stats["by_call"]["getppid"] == made, stats
    assert stats["delayed"] == (made if ns else 0), stats
    if ns:
        assert stats["spun_ns"] >= ns * made and stats["mean_ns"] >= ns, stats


@pytest.fixture(scope="module")
def rounds():
    """ROUNDS rounds of every case (the loop alone, at ns 0, at each of
    ASKED), taken in turn: {case: [(median ns a call, mean_ns), ...]}.
    Each run's loader counted and delayed every call of its loop."""
    folder = cgroup2_root() / f"bpfdelay-guest-{os.getpid()}-rounds"
    folder.mkdir()
    name = "/" + folder.name
    cases = [None, 0, *ASKED]
    found = {c: [] for c in cases}
    try:
        for _ in range(ROUNDS):
            for ns in cases:
                per_call, stats = run(folder, name, ns)
                if stats:
                    assert stats["calls"] == MADE, stats
                    assert stats["delayed"] == (MADE if ns else 0), stats
                found[ns].append((per_call, stats["mean_ns"] if stats else None))
                time.sleep(0.1)
    finally:
        folder.rmdir()
    print(f"bpfdelay on the virtual clock, (ns a call, mean_ns) by ns asked: {found}")
    return found


def spread(values):
    return max(values) - min(values)


def per_call(rounds, ns):
    return [p for p, _ in rounds[ns]]


def cost(rounds, ns):
    """What a delay of @ns asked costs a call beyond the fixed cost: the
    median run's ns a call at @ns less the median run's at 0."""
    return statistics.median(per_call(rounds, ns)) - statistics.median(per_call(rounds, 0))


@pytest.mark.timing
@exact
def test_the_fixed_cost_is_the_same_to_the_ns_in_every_run(rounds, record_property):
    """The loop alone and the loop with the program attached at 0 ns each
    take the same ns a call in every run (callloop prints hundredths of a
    ns: within 0.01 ns a call), so their difference, the fixed cost, is
    one figure."""
    plain, zero = per_call(rounds, None), per_call(rounds, 0)
    fixed = [z - p for z, p in zip(zero, plain)]
    record_property("plain_ns", plain)
    record_property("fixed_ns", fixed)
    assert spread(plain) <= 0.01, plain
    assert spread(zero) <= 0.01, zero
    assert spread(fixed) <= 0.02, fixed
    assert fixed[0] > 0, fixed


@pytest.mark.timing
@exact
@pytest.mark.parametrize("ns", ASKED)
def test_a_delay_costs_the_ns_asked_the_same_in_every_run(rounds, ns, record_property):
    """At @ns asked every run takes the same ns a call, and what the delay
    costs beyond the fixed cost is the ns asked and less than a delay of
    no length (1 ns asked) more: the spin ends at the first clock read at
    or past its deadline, and its reads are no further apart than its
    first is from its start."""
    at_ns = per_call(rounds, ns)
    record_property("per_call_ns", at_ns)
    record_property("cost_ns", cost(rounds, ns))
    assert spread(at_ns) <= 0.01, at_ns
    assert ns <= cost(rounds, ns) <= ns + cost(rounds, 1), (ns, cost(rounds, ns), cost(rounds, 1))


@pytest.mark.timing
@exact
@pytest.mark.parametrize("ns", ASKED)
def test_the_ns_measured_are_the_ns_asked(rounds, ns, record_property):
    """The program's own measure, mean_ns (from a clock read before its
    spin to the last in it), is in every run at least the ns asked and no
    more than what the delay cost the call (the spin is part of it).  It
    is not one figure in every run: an interrupt that lands in a spin
    lengthens that spin alone, and ticks land where they will."""
    mean_ns = [m for _, m in rounds[ns]]
    record_property("mean_ns", mean_ns)
    assert all(ns <= m <= cost(rounds, ns) for m in mean_ns), (ns, mean_ns, cost(rounds, ns))

