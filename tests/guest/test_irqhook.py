"""/dev/irqhook on the patched kernel: its interface, delivery guarantees,
and the irqhook tool's files and trace."""
import csv
import ctypes
import errno
import json
import os
import re
import select
import stat
import struct
import subprocess
import threading
import time
from multiprocessing import Pool

import pytest
from conftest import ROOT, wait_asleep
from uffd import HeldPage, errno_of_call, in_thread, run_briefly

DEV = "/dev/irqhook"
EVENT = struct.Struct("=QQQII")  # seq, write_ns, wake_ns, pending, reserved
libc = ctypes.CDLL(None, use_errno=True)


def drain():
    fd = os.open(DEV, os.O_RDONLY | os.O_NONBLOCK)
    try:
        while True:
            os.read(fd, EVENT.size)
    except BlockingIOError:
        pass
    finally:
        os.close(fd)


@pytest.fixture
def dev():
    assert os.path.exists(DEV), "no /dev/irqhook: CONFIG_IRQHOOK missing"
    drain()
    fd = os.open(DEV, os.O_RDWR)
    yield fd
    os.close(fd)
    drain()


def read_event(fd):
    return EVENT.unpack(os.read(fd, EVENT.size))


def test_device_is_root_only(dev):
    st = os.stat(DEV)
    assert stat.S_ISCHR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600


def test_write_then_read_returns_the_event(dev):
    before = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    assert os.write(dev, b"x") == 1
    seq, write_ns, wake_ns, pending, reserved = read_event(dev)
    after = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    assert before <= write_ns <= wake_ns <= after, "stamps are CLOCK_MONOTONIC, in order"
    assert pending == 0 and reserved == 0
    assert os.write(dev, b"abc") == 3, "a longer write is one event"
    assert read_event(dev)[0] == seq + 1


def test_empty_write_queues_nothing(dev):
    assert os.write(dev, b"") == 0
    fd = os.open(DEV, os.O_RDONLY | os.O_NONBLOCK)
    with pytest.raises(BlockingIOError):
        os.read(fd, EVENT.size)
    os.close(fd)


def test_nonblocking_read_is_eagain(dev):
    fd = os.open(DEV, os.O_RDONLY | os.O_NONBLOCK)
    try:
        with pytest.raises(OSError) as e:
            os.read(fd, EVENT.size)
        assert e.value.errno == errno.EAGAIN
    finally:
        os.close(fd)


def test_small_buffer_is_einval(dev):
    os.write(dev, b"x")
    with pytest.raises(OSError) as e:
        os.read(dev, EVENT.size - 1)
    assert e.value.errno == errno.EINVAL
    assert read_event(dev)[3] == 0, "the event was not consumed by the failed read"


def test_bad_pointer_is_efault_and_event_stays(dev):
    os.write(dev, b"x")
    ret = libc.read(dev, ctypes.c_void_p(16), ctypes.c_size_t(EVENT.size))
    assert ret == -1 and ctypes.get_errno() == errno.EFAULT
    seq_expected = read_event(dev)[0]
    os.write(dev, b"x")
    assert read_event(dev)[0] == seq_expected + 1, "nothing lost, nothing repeated"


def test_poll(dev):
    p = select.poll()
    p.register(dev, select.POLLIN | select.POLLOUT)
    assert dict(p.poll(0)).get(dev) == select.POLLOUT, "writable, not readable, when empty"
    os.write(dev, b"x")
    assert dict(p.poll(0))[dev] & select.POLLIN
    read_event(dev)


def test_queue_is_bounded(dev):
    for _ in range(1024):
        os.write(dev, b"x")
    with pytest.raises(OSError) as e:
        os.write(dev, b"x")
    assert e.value.errno == errno.ENOBUFS
    seqs = [read_event(dev)[0] for _ in range(1024)]
    assert seqs == list(range(seqs[0], seqs[0] + 1024))


def test_signal_interrupts_a_blocked_read(dev):
    # SIGINT after 0.5 s must end the blocked read: timeout's 124.  A read
    # that ignored it would be killed 60 s later (137).  No bound on the
    # time itself: the debug kernel on a busy host took 3 s for the same.
    out = subprocess.run(["timeout", "-k", "60", "-s", "INT", "0.5", "dd", f"if={DEV}",
                          "bs=32", "count=1"], capture_output=True)
    assert out.returncode == 124, "dd should have been blocked, then interrupted by SIGINT"


def _reader(n):
    fd = os.open(DEV, os.O_RDONLY)
    try:
        return [read_event(fd)[0] for _ in range(n)]
    finally:
        os.close(fd)


def _writer(n):
    fd = os.open(DEV, os.O_WRONLY)
    try:
        for _ in range(n):
            os.write(fd, b"x")
    finally:
        os.close(fd)


def test_many_writers_and_readers_lose_and_repeat_nothing(dev):
    with Pool(6) as pool:
        readers = [pool.apply_async(_reader, (200,)) for _ in range(3)]
        time.sleep(0.2)
        writers = [pool.apply_async(_writer, (200,)) for _ in range(3)]
        for w in writers:
            w.get(timeout=120)
        got = [r.get(timeout=120) for r in readers]
    for seqs in got:
        assert seqs == sorted(seqs), "each reader sees events in write order"
    everything = sorted(s for seqs in got for s in seqs)
    assert len(everything) == 600 and len(set(everything)) == 600
    assert everything == list(range(everything[0], everything[0] + 600))


def _flood_writer(n):
    fd = os.open(DEV, os.O_WRONLY)
    full = 0
    try:
        for _ in range(n):
            try:
                os.write(fd, b"x")
            except OSError as e:
                assert e.errno == errno.ENOBUFS, e
                full += 1
    finally:
        os.close(fd)
    return full


def _faulting_reader(n):
    fd = os.open(DEV, os.O_RDONLY | os.O_NONBLOCK)
    faults = 0
    try:
        for _ in range(n):
            if libc.read(fd, ctypes.c_void_p(16), ctypes.c_size_t(EVENT.size)) == -1:
                faults += ctypes.get_errno() == errno.EFAULT
    finally:
        os.close(fd)
    return faults


def test_efault_on_a_full_ring_keeps_its_bound_and_order(dev):
    """Two writers flood the ring while a reader keeps passing a bad buffer:
    every read faults and must leave the ring as it was.  A read that took
    the oldest event and put it back after the fault let a writer fill the
    freed slot in between, and the ring grew past its bound for good."""
    ops = 20000
    with Pool(3) as pool:
        writers = [pool.apply_async(_flood_writer, (ops,)) for _ in range(2)]
        reader = pool.apply_async(_faulting_reader, (ops,))
        faults = reader.get(timeout=600)
        full = [w.get(timeout=600) for w in writers]
    seqs, pendings = [], []
    fd = os.open(DEV, os.O_RDONLY | os.O_NONBLOCK)
    try:
        while len(seqs) <= 4096:
            seq, _, _, pending, _ = EVENT.unpack(os.read(fd, EVENT.size))
            seqs.append(seq)
            pendings.append(pending)
    except BlockingIOError:
        pass
    finally:
        os.close(fd)
    assert len(seqs) == 1024, f"{len(seqs)} events in a ring of 1024"
    assert seqs == sorted(set(seqs)), "duplicates or events out of order"
    assert pendings == list(range(1023, -1, -1))
    assert faults > 0, "no read found an event to fault on"
    assert all(full), f"a writer never found the ring full: {full}"


def test_nonblocking_read_never_waits_for_a_reader_stuck_in_a_fault(dev):
    """One reader copies the oldest event into a page whose fault does not
    end (userfaultfd): a non-blocking read meanwhile is EAGAIN at once,
    and a write still goes in.  Released, the stuck reader gets the oldest
    event, the next reader the next one."""
    os.write(dev, b"x")
    os.write(dev, b"x")
    with HeldPage() as page:
        stuck = page.read_into(dev, EVENT.size)

        def read_nonblocking():
            fd = os.open(DEV, os.O_RDONLY | os.O_NONBLOCK)
            try:
                return errno_of_call(os.read, fd, EVENT.size)
            finally:
                os.close(fd)

        quick = run_briefly(read_nonblocking)
        assert os.write(dev, b"x") == 1
        page.release()
        assert quick == errno.EAGAIN, "the O_NONBLOCK read waited for the stuck reader"
        assert stuck.result(30) == EVENT.size
        first = EVENT.unpack(page.bytes(EVENT.size))[0]
    assert [read_event(dev)[0] for _ in range(2)] == [first + 1, first + 2]


def test_a_read_from_a_full_ring_wakes_a_writer_polling_for_pollout(dev):
    for _ in range(1024):
        os.write(dev, b"x")
    got = {}

    def wait_writable():
        p = select.poll()
        p.register(dev, select.POLLOUT)
        got["events"] = p.poll(60000)

    t = threading.Thread(target=wait_writable)
    t.start()
    time.sleep(0.5)
    assert t.is_alive(), "a full ring polled writable"
    read_event(dev)
    t.join(60)
    assert not t.is_alive(), "the read that made room woke no poller"
    assert got["events"] and got["events"][0][1] & select.POLLOUT


def _blocked_reader(page=None):
    """A thread blocked in read(/dev/irqhook), into @page if given:
    (thread, its tid, a dict that gets the read's return value)."""
    got, tid = {}, []
    ready = threading.Event()

    def read():
        tid.append(threading.get_native_id())
        ready.set()
        fd = os.open(DEV, os.O_RDONLY)
        try:
            if page:
                got["ret"] = libc.read(fd, ctypes.c_void_p(page.addr), EVENT.size)
            else:
                got["ret"] = read_event(fd)
        finally:
            os.close(fd)

    t = threading.Thread(target=read, daemon=True)
    t.start()
    ready.wait()
    wait_asleep(tid[0], "irqhook_read")
    return t, tid[0], got


def _dd_reader():
    """A process blocked in read(/dev/irqhook) for one event, on stdout."""
    p = subprocess.Popen(["dd", f"if={DEV}", f"bs={EVENT.size}", "count=1", "status=none"],
                         stdout=subprocess.PIPE)
    wait_asleep(p.pid, "irqhook_read")
    return p


def test_a_woken_reader_that_fails_passes_its_wake_up_on(dev):
    """Readers R, A and C block in that order.  Write 1 wakes R, whose copy
    out stalls in a held page with the read lock held; write 2 wakes A
    (the wake-up takes it off the wait queue at once), and A is killed
    before it can get that lock.  Each write wakes one reader, so A's
    wake-up was the only one for event 2: unless A passes it on, C sleeps
    with event 2 queued until some other write."""
    with HeldPage() as page:
        r, _, r_got = _blocked_reader(page)
        a = _dd_reader()
        c = _dd_reader()
        os.write(dev, b"x")
        assert page.wait_for_fault(30), "R did not fault on the held page"
        os.write(dev, b"x")
        a.kill()
        a.wait()
        page.release()
        r.join(30)
        assert r_got.get("ret") == EVENT.size
        first = EVENT.unpack(page.bytes(EVENT.size))[0]
    try:
        # Woken, C returns at once; a lost wake-up leaves it asleep for good.
        out, _ = c.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.write(dev, b"x")     # an unrelated write lets C go
        c.communicate(timeout=60)
        pytest.fail("C slept with an event queued: A's wake-up was lost")
    assert EVENT.unpack(out)[0] == first + 1


def test_poll_is_not_readable_while_a_read_would_wait(dev):
    """While a reader is stuck copying the oldest event out (its page held),
    a non-blocking read is EAGAIN, so poll() must not say POLLIN; once the
    reader lets go of the ring, a poller waiting for POLLIN is woken."""
    os.write(dev, b"x")
    os.write(dev, b"x")
    with HeldPage() as page:
        stuck = page.read_into(dev, EVENT.size)
        fd = os.open(DEV, os.O_RDONLY | os.O_NONBLOCK)
        try:
            p = select.poll()
            p.register(fd, select.POLLIN)
            assert errno_of_call(os.read, fd, EVENT.size) == errno.EAGAIN
            assert dict(p.poll(0)).get(fd, 0) & select.POLLIN == 0, \
                "poll says readable while a non-blocking read is EAGAIN"
            waiter = in_thread(lambda: p.poll(120_000))
            page.release()
            assert stuck.result(30) == EVENT.size
            # A poller that nobody wakes returns at its 120 s timeout.
            assert dict(waiter.result(60)).get(fd, 0) & select.POLLIN, \
                "the reader that let go of the ring woke no poller"
            assert read_event(fd)[3] == 0
        finally:
            os.close(fd)


IRQHOOK = ROOT / "userspace/irqhook/irqhook"


def run_irqhook(tmp_path, *args):
    """One run into a new result folder under tmp_path; returns (stdout, folder)."""
    out = subprocess.run([IRQHOOK, "-q", "--period-us", "2000", "-o", tmp_path, *args],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    link = tmp_path / "latest-irqhook"
    assert link.is_symlink(), list(tmp_path.iterdir())
    return out, tmp_path / os.readlink(link)


def tasks(d):
    return list(csv.DictReader(open(d / "tasks.csv")))


def test_run_writes_raw_events_tasks_and_meta(tmp_path):
    out, d = run_irqhook(tmp_path, "-n", "300", "--loads", "2")
    assert sorted(p.name for p in d.iterdir()) == ["events.csv", "meta.json", "tasks.csv"]
    rows = list(csv.DictReader(open(d / "events.csv")))
    assert len(rows) == 300
    assert [int(r["seq"]) for r in rows] == list(range(int(rows[0]["seq"]),
                                                       int(rows[0]["seq"]) + 300))
    assert all(int(r["call_ns"]) < int(r["return_ns"]) for r in rows)
    assert all(int(r["write_ns"]) <= int(r["wake_ns"]) for r in rows)
    assert all(int(r["wakeup_ns"]) == int(r["wake_ns"]) - int(r["write_ns"]) for r in rows)
    meta = json.load(open(d / "meta.json"))
    assert meta["experiment"] == "irqhook" and meta["kernel"]["release"] == os.uname().release
    assert meta["settings"]["events"] == 300 and meta["settings"]["loads"] == 2
    roles = [t["role"] for t in tasks(d)]
    assert roles == ["read", "write", "load", "load"]
    assert all(int(t["tid"]) > 0 for t in tasks(d))
    assert "wake-up after the first event" in out.stdout


def test_normal_run_stays_sched_other(tmp_path):
    _, d = run_irqhook(tmp_path, "-n", "50", "--loads", "1")
    assert {t["policy"] for t in tasks(d)} == {"SCHED_OTHER"}


def test_rt_run_reads_and_writes_as_sched_rr(tmp_path):
    _, d = run_irqhook(tmp_path, "-n", "100", "--rt", "--loads", "1", "--read-cpu", "0",
                       "--write-cpu", "0")
    by_role = {t["role"]: t for t in tasks(d)}
    # What each thread read back from the kernel once it was running.
    for role in ("read", "write"):
        assert by_role[role]["policy"] == "SCHED_RR", by_role[role]
        assert by_role[role]["priority"] == "1" and by_role[role]["cpu"] == "0"
    assert by_role["load"]["policy"] == "SCHED_OTHER"
    assert json.load(open(d / "meta.json"))["settings"]["class"] == "rt"


def test_named_run_makes_no_latest_link(tmp_path):
    out = subprocess.run([IRQHOOK, "-q", "-n", "20", "--period-us", "1000", "-o", tmp_path,
                          "--name", "cell"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cell"]


def test_bad_options_fail_cleanly(tmp_path):
    for args in (["-n", "0"], ["--loads", "x"], ["--load-cpus", "a"], ["--read-cpu", "99"],
                 ["--name", "a/b"], ["extra"], ["-l", "3"]):
        out = subprocess.run([IRQHOOK, "-o", tmp_path / "x", *args], capture_output=True,
                             text=True)
        assert out.returncode == 2, args
        assert out.stderr.startswith("irqhook:")
    assert not (tmp_path / "x").exists()


def test_sweep_records_its_whole_command_line(tmp_path):
    """guest.sh: a grid of two cells, its meta.json's command as given."""
    args = ["-n", "5", "--period-us", "1000", "--loads", "0,1", "--trace-cells", "none",
            "-o", str(tmp_path)]
    out = subprocess.run([ROOT / "userspace/irqhook/guest.sh", *args], capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stderr
    d = tmp_path / os.readlink(tmp_path / "latest-irqhook-sweep")
    assert sorted(p.name for p in d.iterdir() if p.is_dir()) == [
        "0-normal", "0-rt", "1-normal", "1-rt"]
    meta = json.load(open(d / "meta.json"))
    assert meta["command"] == [str(ROOT / "userspace/irqhook/guest.sh"), *args]
    assert meta["settings"]["loads"] == [0, 1]


@pytest.mark.parametrize("args", [["-n", "0"], ["--loads", "1:"], ["--trace-cells", "2:slow"],
                                  ["-C", "4096"], ["--bogus"]])
def test_sweep_bad_values_are_status_2(tmp_path, args):
    out = subprocess.run([ROOT / "userspace/irqhook/guest.sh", "-o", tmp_path / "x", *args],
                         capture_output=True, text=True)
    assert out.returncode == 2, out.stderr
    assert len(out.stderr.splitlines()) == 1 and out.stderr.startswith("guest.sh: ")
    assert not (tmp_path / "x").exists()


def test_missing_device_is_explained(tmp_path):
    out = subprocess.run([IRQHOOK, "--device", "/dev/nonexistent", "-o", tmp_path],
                         capture_output=True, text=True)
    assert out.returncode == 1 and "CONFIG_IRQHOOK" in out.stderr
    assert list(tmp_path.iterdir()) == []


def test_interrupted_run_leaves_nothing(tmp_path):
    p = subprocess.Popen([IRQHOOK, "-n", "100000", "--period-us", "1000", "-o", tmp_path],
                         stderr=subprocess.PIPE, text=True)
    time.sleep(3)
    p.send_signal(2)
    try:
        err = p.communicate(timeout=60)[1]
    finally:
        p.kill()    # a hung one must not steal the next test's events
    assert p.returncode == 130, err
    assert "nothing written" in err
    assert list(tmp_path.iterdir()) == []


def test_a_run_measures_none_of_the_events_left_queued(tmp_path):
    fd = os.open(DEV, os.O_WRONLY)
    for _ in range(3):
        os.write(fd, b"x")
    os.close(fd)
    t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    _, d = run_irqhook(tmp_path, "-n", "50")
    events = list(csv.DictReader(open(d / "events.csv")))
    assert len(events) == 50
    assert all(int(e["write_ns"]) > t0 for e in events), "an earlier event was measured"


def test_traced_run_has_the_irqhook_events(tmp_path):
    _, d = run_irqhook(tmp_path, "-n", "200", "--loads", "1", "--trace")
    trace = d / "trace.dat"
    assert trace.exists()
    report = subprocess.run(["trace-cmd", "report", "-i", trace], capture_output=True,
                            text=True, check=True).stdout
    # Exactly this run's events, none that an earlier run left queued (the
    # run drains the device before tracing starts).
    seqs = {e["seq"] for e in csv.DictReader(open(d / "events.csv"))}
    assert len(seqs) == 200
    for event in ("irqhook_write", "irqhook_read"):
        traced = re.findall(rf"{event}:\s+seq=(\d+)", report)
        assert len(traced) == 200 and set(traced) == seqs, (event, len(traced))
    assert "sched_switch:" in report and "sched_wakeup:" in report
    # The reader's thread id in tasks.csv is the one the trace shows waking.
    reader = next(t for t in tasks(d) if t["role"] == "read")
    assert f"pid={reader['tid']}" in report
