"""workloads/reqtime, Apache's reference client: a CSV row per request
with its status, its time and the counter's change while it was in
flight, against a small server here whose handler moves the counter; the
rows read by lablib's reader as the host reads a sweep's reply logs."""
import csv
import errno
import http.server
import io
import os
import re
import socket
import subprocess
import threading

import pytest

from lablib.experiments import workloads

HEADER = "request,status,seconds,calls,error"


@pytest.fixture(scope="module")
def reqtime(root):
    subprocess.run(["make", "-s", "-C", root / "workloads"], check=True)
    return root / "workloads/reqtime"


class Handler(http.server.BaseHTTPRequestHandler):
    counter = None          # a file holding a number, moved by each request
    calls = 7

    def do_GET(self):
        if self.counter:
            n = int(self.counter.read_text())
            self.counter.write_text(f"{n + self.calls}\n")
        if self.path == "/page":
            body = b"<p>page</p>\n" * 100
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif self.path == "/unsized":
            # No Content-Length: the reply ends where the server closes.
            self.protocol_version = "HTTP/1.0"
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"x" * 5000)
            self.close_connection = True
        else:
            self.send_error(404)

    def log_message(self, *args):
        pass


@pytest.fixture
def server(tmp_path):
    Handler.counter = tmp_path / "calls"
    Handler.counter.write_text("1000\n")
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    Handler.protocol_version = "HTTP/1.1"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd.server_address[1]
    httpd.shutdown()


def run(reqtime, *args, counter=None):
    fds = ()
    opened = None
    if counter:
        opened = os.open(counter, os.O_RDONLY)
        fds = (opened,)
        args = ("--calls-fd", str(opened), *args)
    try:
        return subprocess.run([reqtime, *args], capture_output=True, text=True, timeout=60,
                              pass_fds=fds)
    finally:
        if opened is not None:
            os.close(opened)


def rows(out):
    """reqtime's rows: its header first, then a dict a request."""
    assert out.splitlines()[0] == HEADER, out
    return list(csv.DictReader(io.StringIO(out)))


def read_back(tmp_path, out):
    """What lablib's reader makes of the output, kept as the sweep keeps it."""
    log = tmp_path / "reply-l0-1.csv"
    log.write_text(out)
    return workloads.read_replies(log)


def test_a_row_per_request_with_the_calls_made_meanwhile(reqtime, server, tmp_path):
    r = run(reqtime, "-n", "3", "-i", "10", "127.0.0.1", str(server), "/page",
            counter=Handler.counter)
    assert r.returncode == 0, r.stderr
    got = rows(r.stdout)
    assert [g["request"] for g in got] == ["1", "2", "3"]
    for g in got:
        assert g["status"] == "200" and 0 < float(g["seconds"]) < 30 and g["error"] == ""
        # Nine decimals: the ns reqtime measured.
        assert re.fullmatch(r"\d+\.\d{9}", g["seconds"]), g
        assert int(g["calls"]) == Handler.calls
    assert Handler.counter.read_text() == f"{1000 + 3 * Handler.calls}\n"
    replies, errors = read_back(tmp_path, r.stdout)
    assert errors == 0
    assert replies == [(float(g["seconds"]), Handler.calls) for g in got]


def test_without_a_counter_the_calls_are_empty(reqtime, server, tmp_path):
    r = run(reqtime, "-n", "2", "-i", "0", "127.0.0.1", str(server), "/page")
    assert r.returncode == 0, r.stderr
    assert [(g["status"], g["calls"]) for g in rows(r.stdout)] == [("200", "")] * 2
    replies, errors = read_back(tmp_path, r.stdout)
    assert errors == 0 and [c for _, c in replies] == [None, None]


def test_other_statuses_and_unsized_replies(reqtime, server, tmp_path):
    r = run(reqtime, "-n", "1", "127.0.0.1", str(server), "/missing")
    assert rows(r.stdout)[0]["status"] == "404"
    # Not the page timed: lablib counts it with the failed requests.
    assert read_back(tmp_path, r.stdout) == ([], 1)
    r = run(reqtime, "-n", "1", "127.0.0.1", str(server), "/unsized", counter=Handler.counter)
    assert r.returncode == 0, r.stderr
    g = rows(r.stdout)[0]
    assert (g["status"], g["calls"]) == ("200", str(Handler.calls))


def test_a_refused_connection_is_a_row_not_the_end(reqtime, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]           # bound, not listening: refused
        r = run(reqtime, "-n", "2", "-i", "0", "127.0.0.1", str(port), "/")
    assert r.returncode == 0
    assert r.stdout.splitlines() == [HEADER, "1,,,,connect: Connection refused",
                                      "2,,,,connect: Connection refused"]
    assert read_back(tmp_path, r.stdout) == ([], 2)


@pytest.mark.parametrize("args, message", [
    (["-n", "0", "127.0.0.1", "80", "/"], "--requests wants"),
    (["-i", "x", "127.0.0.1", "80", "/"], "--interval wants"),
    (["localhost", "80", "/"], "IPv4 address"),
    (["127.0.0.1", "70000", "/"], "PORT wants"),
    (["127.0.0.1", "80", "index.html"], "PATH wants"),
    (["--calls-fd", "99", "127.0.0.1", "80", "/"], "calls counter"),
    (["--fifo", "0", "127.0.0.1", "80", "/"], "--fifo wants"),
    (["--warmup", "101", "127.0.0.1", "80", "/"], "--warmup wants"),
    (["--fifo", "100", "127.0.0.1", "80", "/"], "--fifo wants"),
    (["127.0.0.1", "80"], "usage"),
    (["-i", "100", "--phase", "100", "127.0.0.1", "80", "/"], "--phase wants less than the "
                                                             "interval (100 ms), not 100"),
    (["--bogus", "127.0.0.1", "80", "/"], "bogus"),
])
def test_bad_arguments_are_refused(reqtime, args, message):
    r = run(reqtime, *args)
    assert r.returncode in (1, 2) and message in r.stderr and r.stdout == ""


def test_requests_start_on_the_grid_of_the_interval(reqtime, server):
    """Each request sleeps to the next whole multiple of the interval on
    CLOCK_MONOTONIC (the tick's grid), moved --phase later; with 0, none
    sleeps."""
    for interval, phase, sleeps in ((250, 0, 3), (250, 100, 3), (0, 0, 0)):
        r = subprocess.run(["strace", "-e", "trace=clock_nanosleep", reqtime, "-n", "3", "-i",
                            str(interval), "--phase", str(phase), "127.0.0.1", str(server),
                            "/page"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        calls = [ln for ln in r.stderr.splitlines() if ln.startswith("clock_nanosleep")]
        assert len(calls) == sleeps, r.stderr
        for ln in calls:
            assert "CLOCK_MONOTONIC, TIMER_ABSTIME" in ln, ln
            sec, nsec = map(int, re.search(r"tv_sec=(\d+), tv_nsec=(\d+)", ln).groups())
            assert (sec * 10**9 + nsec) % (interval * 10**6) == phase * 10**6, ln


@pytest.mark.skipif(os.geteuid() != 0, reason="SCHED_FIFO needs root")
def test_fifo_runs_the_client_as_a_real_time_task(reqtime, server):
    r = subprocess.run(["strace", "-e", "trace=sched_setscheduler", reqtime, "--fifo", "7",
                        "-n", "1", "-i", "0", "127.0.0.1", str(server), "/page"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert re.search(r"sched_setscheduler\(0, SCHED_FIFO, \[7\]\) += 0", r.stderr), r.stderr
    assert rows(r.stdout)[0]["status"] == "200"
    # Without the right to, it says so and makes no request.
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", reqtime,
                        "--fifo", "7", "-n", "1", "127.0.0.1", str(server), "/page"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "cannot run as SCHED_FIFO 7" in r.stderr and r.stdout == ""


def test_warmup_requests_are_made_but_not_printed(reqtime, server):
    r = run(reqtime, "--warmup", "2", "-n", "3", "-i", "0", "127.0.0.1", str(server), "/page",
            counter=Handler.counter)
    assert r.returncode == 0, r.stderr
    # Numbered from the first timed one.
    assert [g["request"] for g in rows(r.stdout)] == ["1", "2", "3"]
    # The server saw five requests: the counter moved five times.
    assert Handler.counter.read_text() == f"{1000 + 5 * Handler.calls}\n"


class Resp(threading.Thread):
    """A Redis stand-in on one connection: GET answers a bulk string sent
    in two pieces (a reply read in parts), nil for 'missing', an error
    for 'bad'; it moves the counter by 3 a request and closes after
    @close_after requests."""

    def __init__(self, counter, close_after=None):
        super().__init__(daemon=True)
        self.counter, self.close_after = counter, close_after
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.connections = 0

    def run(self):
        conn, _ = self.sock.accept()
        self.connections += 1
        served, buf = 0, b""
        with conn:
            while self.close_after is None or served < self.close_after:
                data = conn.recv(4096)
                if not data:
                    return
                buf += data
                while buf.count(b"\r\n") >= 5:          # *2 $3 GET $n KEY
                    parts = buf.split(b"\r\n")
                    key, buf = parts[4], b"\r\n".join(parts[5:])
                    n = int(self.counter.read_text())
                    self.counter.write_text(f"{n + 3}\n")
                    served += 1
                    if key == b"missing":
                        conn.sendall(b"$-1\r\n")
                    elif key == b"bad":
                        conn.sendall(b"-ERR wrong kind\r\n")
                    else:
                        value = b"v" * 3000
                        conn.sendall(b"$3000\r\n" + value[:1000])
                        conn.sendall(value[1000:] + b"\r\n")


@pytest.mark.parametrize("key, status", [("k", "200"), ("missing", "200"), ("bad", "500")])
def test_redis_requests_share_one_connection(reqtime, tmp_path, key, status):
    """--redis: GET KEY in Redis's protocol, every request on the one
    connection, each reply read whole (a bulk string in pieces, nil, an
    error reply) with the counter's change in its span."""
    counter = tmp_path / "calls"
    counter.write_text("50\n")
    srv = Resp(counter)
    srv.start()
    r = run(reqtime, "--redis", "-n", "4", "--warmup", "1", "-i", "0", "127.0.0.1",
            str(srv.port), key, counter=counter)
    assert r.returncode == 0, r.stderr
    got = rows(r.stdout)
    assert [g["status"] for g in got] == [status] * 4, got
    assert all(g["calls"] == "3" and g["error"] == "" for g in got), got
    assert all(0 < float(g["seconds"]) < 5 for g in got)
    assert srv.connections == 1 and counter.read_text() == "65\n"


def test_a_lost_redis_connection_is_an_error_row_a_request(reqtime, tmp_path):
    counter = tmp_path / "calls"
    counter.write_text("0\n")
    srv = Resp(counter, close_after=2)
    srv.start()
    r = run(reqtime, "--redis", "-n", "4", "-i", "0", "127.0.0.1", str(srv.port), "k",
            counter=counter)
    assert r.returncode == 1
    got = rows(r.stdout)
    assert [g["status"] for g in got] == ["200", "200", "", ""], got
    assert got[2]["error"].startswith("reply: ") and got[3]["error"] == "connection lost", got
    assert all(g["seconds"] == g["calls"] == "" for g in got[2:]), got
    replies, errors = read_back(tmp_path, r.stdout)
    assert len(replies) == 2 and errors == 2


def test_a_refused_redis_connection_is_a_row_for_every_request(reqtime):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        r = run(reqtime, "--redis", "-n", "3", "-i", "0", "127.0.0.1", str(port), "k")
    assert r.returncode == 1
    assert [g["error"] for g in rows(r.stdout)] == ["connect: Connection refused"] * 3


def test_no_reason_needs_quoting(root):
    """An error's reason goes into the CSV as it is when it has no comma,
    quote or line break (reqtime quotes one that has): reqtime's own
    reasons have none, nor has the C library's text of the errors a
    request meets."""
    text = (root / "workloads/reqtime.c").read_text()
    reasons = re.findall(r'row_error\("([^"]*)"', text)
    assert sorted(reasons) == ["connect: %s", "connect: %s", "connection lost",
                               "reply: %s", "send: %s"], reasons
    assert not any(set(r) & set(',"\r\n') for r in reasons)
    for e in ("ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH"):
        assert not set(os.strerror(getattr(errno, e))) & set(',"\r\n'), e


def test_a_redis_key_of_two_lines_is_refused(reqtime):
    r = run(reqtime, "--redis", "127.0.0.1", "6379", "a\r\nFLUSHALL")
    assert r.returncode == 2 and "a short key of one line" in r.stderr
