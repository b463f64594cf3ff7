"""Fault injection (issue 26) on the lab's core: every allocation of
loading delay (with a cgroup and a syscall set), of writing each of its
parameters and of using /dev/irqhook fails, one at a time, and each
failure is an error and nothing else (tests/guest/faultwalk.py says how;
each experiment walks its own module in test_<experiment>_faultinject.py).
make test-debug runs these on the debug kernel."""
import os

import pytest
from conftest import MODDIR, insmod, rmmod
from faultwalk import Walk, attempt, device_walk, walk_calls, walk_load

IRQHOOK = "/dev/irqhook"
IRQHOOK_EVENT = 32                     # sizeof(struct irqhook_event)


def test_every_allocation_of_loading_delay_fails_cleanly(fault_injection, scratch_cgroup,
                                                         no_module_loaded, record_property):
    params = f"cgroup={scratch_cgroup} syscalls=0,1,39 loops=100 delays=read:5,39:7"

    def works(n):
        assert (MODDIR / "parameters/cgroup").read_text().strip() == scratch_cgroup
        assert (MODDIR / "parameters/syscalls").read_text().strip() == "0,1,39"
        assert (MODDIR / "parameters/delays").read_text().strip() == "read:5,getpid:7"
        assert (MODDIR / "stats/calls").exists()

    walk = Walk("insmod delay " + params)
    walk_load(walk, "delay", params, works)
    assert walk.finish(record_property) > 0
    # The next load works without a fault, as the last step showed; and
    # the module loads plainly too.
    insmod("delay")
    rmmod("delay")


@pytest.mark.parametrize("param, value", [("cgroup", None), ("syscalls", "0,1,39"),
                                          ("loops", "1000"), ("ns", "2000"),
                                          ("delays", "read:2000,futex:50000"),
                                          ("every", "3"), ("mode", "sleep"),
                                          ("where", "exit")])
def test_every_allocation_of_a_delay_parameter_write_fails_cleanly(
        fault_injection, scratch_cgroup, no_module_loaded, param, value, record_property):
    value = value or scratch_cgroup
    path = MODDIR / "parameters" / param
    insmod("delay")
    old = path.read_text()

    def calls():
        fd = attempt(os.open, path, os.O_WRONLY)
        if isinstance(fd, str):
            return f"open {fd}"
        try:
            written = attempt(os.write, fd, value.encode())
        finally:
            os.close(fd)
        return "written" if written == len(value) else f"write {written}"

    def works(n):
        # The old value or the new one, never anything else; then back to
        # the old one without a fault.
        now = path.read_text()
        assert now in (old, value + "\n", value), (n, now)
        with open(path, "w") as f:
            f.write(old.strip() or "\n")
        assert path.read_text() == old

    walk = Walk(f"write {value} to delay's {param}")
    walk_calls(walk, calls, works)
    rmmod("delay")
    assert walk.finish(record_property) > 0


def test_every_allocation_of_using_irqhook_fails_cleanly(fault_injection, no_module_loaded,
                                                         record_property):
    """Open, write an event, read it back and close, each allocation failed
    in turn; afterwards an event still goes through."""
    def works(n):
        fd = os.open(IRQHOOK, os.O_RDWR | os.O_NONBLOCK)
        try:
            assert os.write(fd, b"x") == 1
            assert len(os.read(fd, IRQHOOK_EVENT)) == IRQHOOK_EVENT
        finally:
            os.close(fd)

    device_walk(IRQHOOK, IRQHOOK_EVENT, works, record_property)
