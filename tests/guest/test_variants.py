"""The kernel variants (config/variants/): each boots as what it says it is,
and the delay module loads, delays and unloads safely on it.  'make test'
runs this file in the stock boot with the other guest tests, and again in
boots of the rt and debug variants."""
import os
import pathlib
import re
import time

import pytest
from conftest import MODDIR, cycle_under_load, insmod, kernel_problems, read_int, rmmod, \
    write_param


def booted_variant():
    """What scripts/vm.sh booted (lab.variant= on the kernel command line)."""
    m = re.search(r"\blab\.variant=(\S+)", pathlib.Path("/proc/cmdline").read_text())
    return m[1] if m else None


def test_kernel_is_the_variant_it_was_booted_as():
    variant = booted_variant()
    assert variant in ("stock", "rt", "debug"), variant
    release, version = os.uname().release, os.uname().version
    if variant == "rt":
        assert "PREEMPT_RT" in version and release.endswith("-lab-rt"), (release, version)
    elif variant == "debug":
        assert "PREEMPT_RT" not in version and release.endswith("-lab-debug"), release
    else:
        assert "PREEMPT_RT" not in version and release.endswith("-lab"), (release, version)


@pytest.mark.timing
def test_delay_loads_delays_and_unloads(clean_module):
    insmod("delay", "loops=0")
    t0 = time.perf_counter_ns()
    for _ in range(2000):
        os.getppid()
    base = (time.perf_counter_ns() - t0) / 2000
    assert write_param("20000") == 0
    spun0 = read_int(MODDIR / "stats/spun")
    t0 = time.perf_counter_ns()
    for _ in range(200):
        os.getppid()
    slow = (time.perf_counter_ns() - t0) / 200
    assert read_int(MODDIR / "stats/spun") - spun0 >= 200 * 20000
    # 20000 loops cost microseconds on any machine.
    assert slow > base + 1000, (base, slow)
    rmmod()
    assert not MODDIR.exists()
    assert kernel_problems() == []


def test_unloads_safely_under_syscall_load(clean_module):
    def one_cycle(i):
        insmod("delay", f"loops={500 * (i % 3)}")
        time.sleep(0.02)
        rmmod()

    cycle_under_load(20, one_cycle)
