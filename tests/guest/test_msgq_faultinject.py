"""Fault injection on the msgq module (issue 26, tests/guest/faultwalk.py):
every allocation of loading it (both buffer strategies, the largest
capacity), while another process keeps opening its first queue, and of
using a queue fails, one at a time, and each failure is an error and
nothing else.  make test-debug runs these on the debug kernel."""
import os
import pathlib

import pytest
from conftest import insmod, rmmod
from faultwalk import MSG, Opener, Walk, device_walk, walk_load

MSGQ_QUEUES = ("bus_in_q", "bus_out_q1", "bus_out_q2", "bus_out_q3")
MSGQ_CAPACITY = 4096                   # the maximum: the largest allocations


def queue_stat(q, name):
    """A stat of msgq's queue @q (under /sys/class/msgq or misc)."""
    found = list(pathlib.Path("/sys/class").glob(f"*/{q}/stats/{name}"))
    assert found, f"no stats/{name} for {q}"
    return int(found[0].read_text())


def msgq_round_trip(q="bus_in_q"):
    """A message written to @q comes back, and nothing stays allocated."""
    fd = os.open(f"/dev/{q}", os.O_RDWR | os.O_NONBLOCK)
    try:
        assert os.write(fd, MSG) == len(MSG)
        record = os.read(fd, 8192)
        assert record.endswith(MSG[8:]), record
    finally:
        os.close(fd)
    assert queue_stat(q, "allocated") == 0


@pytest.mark.parametrize("alloc", ["dynamic", "static"])
def test_every_allocation_of_loading_msgq_fails_cleanly(fault_injection, no_module_loaded,
                                                        alloc, record_property):
    params = f"alloc={alloc} capacity={MSGQ_CAPACITY}"

    def works(n):
        for q in MSGQ_QUEUES:
            assert pathlib.Path(f"/dev/{q}").exists(), q
        msgq_round_trip()

    walk = Walk("insmod msgq " + params)
    opener = Opener([f"/dev/{MSGQ_QUEUES[0]}"])
    try:
        walk_load(walk, "msgq", params, works, opener)
    finally:
        opener.close()
    print(f"{walk.what}: the opener held {opener.opened} files over "
          f"{opener.loads_with_a_file} loads")
    record_property("files_opened_during_loads", opener.opened)
    assert walk.finish(record_property) > 0
    assert not pathlib.Path(f"/dev/{MSGQ_QUEUES[0]}").exists()


def test_every_allocation_of_using_a_queue_fails_cleanly(fault_injection, no_module_loaded,
                                                         record_property):
    """Open, write a message, read it back and close, each allocation
    failed in turn; afterwards a round trip works and nothing stays
    allocated."""
    insmod("msgq", "alloc=dynamic")
    try:
        device_walk(f"/dev/{MSGQ_QUEUES[0]}", 8192, lambda n: msgq_round_trip(),
                    record_property)
    finally:
        rmmod("msgq")
