"""The delay module on the patched kernel: loading, its parameter and
counters, refusing bad values, and the hook's registration rules."""
import errno
import os
import stat

import pytest
from conftest import LOOPS, MODDIR, insmod, read_int, rmmod, write_param


def test_load_and_unload(clean_module):
    insmod()
    assert MODDIR.exists()
    assert read_int(LOOPS) == 0
    rmmod()
    assert not MODDIR.exists()


def test_load_time_parameter(clean_module):
    insmod("delay", "loops=123")
    assert read_int(LOOPS) == 123


def test_bad_load_time_parameter_fails(clean_module):
    out = insmod("delay", "loops=-1", check=False)
    assert out.returncode != 0
    assert not MODDIR.exists()


def test_loops_is_root_only(delay):
    mode = os.stat(LOOPS).st_mode
    assert stat.S_IMODE(mode) == 0o644
    assert os.stat(LOOPS).st_uid == 0


def test_counters_move(delay):
    calls0 = read_int(MODDIR / "stats/calls")
    spun0 = read_int(MODDIR / "stats/spun")
    for _ in range(1000):
        os.getppid()
    calls1 = read_int(MODDIR / "stats/calls")
    assert calls1 - calls0 >= 1000
    assert read_int(MODDIR / "stats/spun") == spun0, "loops=0 must spin nothing"

    assert write_param("10") == 0
    spun1 = read_int(MODDIR / "stats/spun")
    for _ in range(1000):
        os.getppid()
    assert read_int(MODDIR / "stats/spun") - spun1 >= 10 * 1000


def test_counters_are_read_only(delay):
    for name in ("calls", "spun"):
        assert stat.S_IMODE(os.stat(MODDIR / "stats" / name).st_mode) == 0o444


@pytest.mark.parametrize("value", ["-1", "abc", "\n", " 5", "1.5", "12abc", "1000001",
                                   "4294967296", "99999999999999999999", "0x"])
def test_bad_value_refused_old_kept(delay, value):
    assert write_param("250") == 0
    assert write_param(value) == errno.EINVAL
    assert read_int(LOOPS) == 250


@pytest.mark.parametrize("value, expect", [("0", 0), ("1000000", 1000000), ("77\n", 77),
                                           ("0x10", 16)])
def test_good_values_accepted(delay, value, expect):
    assert write_param(value) == 0
    assert read_int(LOOPS) == expect
    write_param("0")


def test_second_hook_is_busy(delay):
    out = insmod("hooktest", check=False)
    assert out.returncode != 0
    assert "busy" in out.stderr.lower(), out.stderr


def test_hook_is_free_after_unload(delay):
    rmmod()
    insmod("hooktest")
    rmmod("hooktest")
