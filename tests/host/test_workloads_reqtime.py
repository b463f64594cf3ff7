"""workloads/reqtime, Apache's reference client: a line per request with
its status, its time and the counter's change while it was in flight,
against a small server here whose handler moves the counter."""
import http.server
import os
import re
import socket
import subprocess
import threading

import pytest


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


def test_a_line_per_request_with_the_calls_made_meanwhile(reqtime, server):
    r = run(reqtime, "-n", "3", "-i", "10", "127.0.0.1", str(server), "/page",
            counter=Handler.counter)
    assert r.returncode == 0, r.stderr
    lines = [ln.split() for ln in r.stdout.splitlines()]
    assert len(lines) == 3
    for status, seconds, calls in lines:
        assert status == "200" and 0 < float(seconds) < 30
        assert int(calls) == Handler.calls
    assert Handler.counter.read_text() == f"{1000 + 3 * Handler.calls}\n"


def test_without_a_counter_the_calls_are_a_dash(reqtime, server):
    r = run(reqtime, "-n", "2", "-i", "0", "127.0.0.1", str(server), "/page")
    assert r.returncode == 0, r.stderr
    assert [ln.split()[::2] for ln in r.stdout.splitlines()] == [["200", "-"]] * 2


def test_other_statuses_and_unsized_replies(reqtime, server):
    r = run(reqtime, "-n", "1", "127.0.0.1", str(server), "/missing")
    assert r.stdout.split()[0] == "404"
    r = run(reqtime, "-n", "1", "127.0.0.1", str(server), "/unsized", counter=Handler.counter)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[0::2] == ["200", str(Handler.calls)]


def test_a_refused_connection_is_a_line_not_the_end(reqtime):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]           # bound, not listening: refused
        r = run(reqtime, "-n", "2", "-i", "0", "127.0.0.1", str(port), "/")
    assert r.returncode == 0
    assert r.stdout.splitlines() == ["error connect: Connection refused"] * 2


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
    assert r.stdout.split()[0] == "200"
    # Without the right to, it says so and makes no request.
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", reqtime,
                        "--fifo", "7", "-n", "1", "127.0.0.1", str(server), "/page"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "cannot run as SCHED_FIFO 7" in r.stderr and r.stdout == ""


def test_warmup_requests_are_made_but_not_printed(reqtime, server):
    r = run(reqtime, "--warmup", "2", "-n", "3", "-i", "0", "127.0.0.1", str(server), "/page",
            counter=Handler.counter)
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.splitlines()) == 3
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
    lines = [ln.split() for ln in r.stdout.splitlines()]
    assert [ln[0] for ln in lines] == [status] * 4 and all(ln[2] == "3" for ln in lines), lines
    assert all(0 < float(ln[1]) < 5 for ln in lines)
    assert srv.connections == 1 and counter.read_text() == "65\n"


def test_a_lost_redis_connection_is_an_error_line_a_request(reqtime, tmp_path):
    counter = tmp_path / "calls"
    counter.write_text("0\n")
    srv = Resp(counter, close_after=2)
    srv.start()
    r = run(reqtime, "--redis", "-n", "4", "-i", "0", "127.0.0.1", str(srv.port), "k")
    assert r.returncode == 1
    lines = r.stdout.splitlines()
    assert [ln.split()[0] for ln in lines[:2]] == ["200", "200"], lines
    assert lines[2].startswith("error reply") and lines[3] == "error connection lost", lines


def test_a_redis_key_of_two_lines_is_refused(reqtime):
    r = run(reqtime, "--redis", "127.0.0.1", "6379", "a\r\nFLUSHALL")
    assert r.returncode == 2 and "a short key of one line" in r.stderr
