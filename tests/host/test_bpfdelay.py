"""The BPF delay (userspace/bpfdelay) on this machine's own kernel: a
getppid loop in a cgroup delayed by the ns asked, exactly the calls it
makes; nothing outside the cgroup; the module's every/first/ppm choice,
exact; the program gone once a SIGKILLed loader is gone; each refusal one
line, status 2 for a bad option and 1 for a kernel that cannot run it.
The tests that load the program skip, with the loader's own line, where
this kernel cannot run it."""
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from lablib.bpfdelay.loader import Loader, cannot_run
from lablib.host import cgroup2_mount

ROOT = Path(__file__).resolve().parents[2]
DIR = ROOT / "userspace/bpfdelay"
LOADER = DIR / "bpfdelay"
CALLLOOP = DIR / "callloop"


@pytest.fixture(scope="module")
def built():
    """The tools, built now (make is a no-op when they are up to date)."""
    out = subprocess.run(["make", "-C", DIR, "-s"], capture_output=True, text=True)
    if out.returncode == 0 and not LOADER.exists():
        pytest.skip(out.stdout.strip())     # no BTF on this kernel: not built
    if out.returncode:
        pytest.fail("userspace/bpfdelay does not build (clang, bpftool, libbpf-dev: "
                    f"make deps):\n{out.stdout}{out.stderr}")
    return LOADER


@pytest.fixture(scope="module")
def kernel(built):
    """The cgroup2 mount, once the loader has attached on this kernel;
    else a skip with what is missing."""
    why = cannot_run()
    if why:
        pytest.skip(why)
    return cgroup2_mount()


@pytest.fixture
def cgroup(kernel, request):
    """A new cgroup v2 (its path from the root, its folder), removed after."""
    name = f"/bpfdelay-test-{os.getpid()}-{request.node.name[:40]}"
    for c in "[]=,":
        name = name.replace(c, "-")
    folder = kernel / name.lstrip("/")
    folder.mkdir()
    yield name, folder
    for sub in sorted(folder.rglob("*"), reverse=True):
        if sub.is_dir():
            sub.rmdir()
    folder.rmdir()


def callloop(folder=None, batches=2, calls=500):
    """getppid batches in cgroup @folder (None: here); ns a call of each."""
    def join():
        if folder:
            (folder / "cgroup.procs").write_text(str(os.getpid()))
    out = subprocess.run([CALLLOOP, "-n", str(batches), "--calls", str(calls),
                          "--warmup", "0"], capture_output=True, text=True, check=True,
                         preexec_fn=join)
    return [float(x) for x in out.stdout.split()[:-2]]


@pytest.mark.parametrize("ns", [1000, 5000])
def test_a_loop_in_the_cgroup_is_delayed_by_the_ns_asked(cgroup, tmp_path, ns):
    name, folder = cgroup
    with Loader("--ns", ns, "--cgroup", name, "--syscalls", "getppid",
                "--stats", tmp_path, timeout=30) as loader:
        per_call = callloop(folder, batches=4, calls=500)
        so_far = loader.usr1()
        stats = loader.stop()
    assert so_far == stats, "SIGUSR1's statistics are not the final ones"
    assert stats["calls"] == stats["delayed"] == stats["by_call"]["getppid"] == 2000, stats
    assert stats["mean_ns"] >= ns and stats["spun_ns"] >= ns * 2000, stats
    assert min(per_call) >= ns, per_call
    # The module's stats/ and parameters/, beside the JSON.
    assert (tmp_path / "stats/delayed").read_text() == "2000\n"
    by_call = (tmp_path / "stats/by_call").read_bytes()
    assert int.from_bytes(by_call[110 * 8:111 * 8], "little") == 2000   # getppid: 110
    assert (tmp_path / "parameters/syscalls").read_text() == "110\n"


def test_nothing_outside_the_cgroup_is_delayed(cgroup):
    """A process outside the target is neither delayed nor counted; one in
    a cgroup below it is both."""
    name, folder = cgroup
    (folder / "sub").mkdir()
    with Loader("--ns", 5000, "--cgroup", name, "--syscalls", "getppid") as loader:
        callloop(None, batches=2, calls=1000)
        callloop(folder / "sub", batches=1, calls=300)
        stats = loader.stop()
    assert stats["calls"] == stats["delayed"] == 300, stats


def test_control_changes_the_ns_and_the_cgroup_while_attached(cgroup):
    """--control: one loader for a whole sweep.  Its stdin takes 'ns N',
    'cgroup PATH' and 'stats', each answered with one line; a bad one is
    an 'error:' line and changes nothing; the end of its stdin detaches
    it, with the final statistics."""
    name, folder = cgroup
    with Loader("--control", "--syscalls", "getppid", timeout=30) as loader:
        assert loader.ask(f"cgroup {name}") == f"ok cgroup={name}"
        callloop(folder, batches=1, calls=300)         # counted, not delayed
        at_0 = json.loads(loader.ask("stats"))
        assert loader.ask("ns 5000") == "ok ns=5000"
        per_call = callloop(folder, batches=1, calls=200)
        at_5000 = json.loads(loader.ask("stats"))
        for bad in ("ns 5000001", "ns x", "loops 300", "cgroup /no-such-cgroup-here", "fly"):
            assert loader.ask(bad).startswith("error: "), bad
        assert loader.ask("cgroup ") == "ok cgroup="     # every task: this one too
        assert loader.ask("ns 0") == "ok ns=0"
        callloop(None, batches=1, calls=100)
        stats = loader.close()
    assert at_0["calls"] == 300 and at_0["delayed"] == 0, at_0
    assert at_5000["calls"] == 500 and at_5000["delayed"] == 200, at_5000
    assert per_call[0] >= 5000 and at_5000["spun_ns"] >= 200 * 5000, (per_call, at_5000)
    assert stats["by_call"]["getppid"] >= 600 and stats["delayed"] == 200, stats


def draw(seed, i):
    """The module's SplitMix64 draw (modules/delay/delay_main.c)."""
    m = (1 << 64) - 1
    x = (seed + (i + 1) * 0x9e3779b97f4a7c15) & m
    x = ((x ^ (x >> 30)) * 0xbf58476d1ce4e5b9) & m
    x = ((x ^ (x >> 27)) * 0x94d049bb133111eb) & m
    return x ^ (x >> 31)


@pytest.mark.parametrize("opts, chosen", [
    (["--ppm", "100000", "--seed", "7"],
     lambda i: draw(7, i) % 1000000 < 100000),
    (["--every", "3", "--first", "100"], lambda i: i < 100 and i % 3 == 0),
])
def test_the_calls_chosen_are_the_modules(cgroup, opts, chosen):
    name, folder = cgroup
    with Loader("--ns", 1, "--cgroup", name, "--syscalls", "getppid", *opts) as loader:
        callloop(folder, batches=1, calls=1000)
        stats = loader.stop()
    expected = sum(1 for i in range(1000) if chosen(i))
    assert stats["considered"] == 1000 and stats["calls"] == 1000, stats
    assert stats["chosen"] == stats["delayed"] == expected, stats


def links_of(pid):
    """The BPF links process @pid holds: {link id: program id}, from the
    fdinfo of its descriptors."""
    links = {}
    for info in Path(f"/proc/{pid}/fdinfo").iterdir():
        fields = dict(line.split(":", 1) for line in info.read_text().splitlines()
                      if ":" in line)
        if "link_id" in fields:
            links[int(fields["link_id"])] = int(fields["prog_id"])
    return links


def loaded(what):
    out = subprocess.run(["bpftool", "-j", what, "show"], capture_output=True, text=True,
                         check=True)
    return {x["id"] for x in json.loads(out.stdout or "[]")}


def test_sigkill_of_the_loader_detaches(cgroup):
    """The program's link is the loader's file descriptor, never pinned:
    once a SIGKILLed loader is reaped its link is gone, its program soon
    after (freed after an RCU grace period), and the target's next calls
    are not delayed (5 ms asked: 200 of them would take a second)."""
    if not shutil.which("bpftool"):
        pytest.skip("no bpftool to list the kernel's links and programs")
    name, folder = cgroup
    with Loader("--ns", 5000000, "--cgroup", name, "--syscalls", "getppid") as loader:
        links = links_of(loader.proc.pid)
        assert links and set(links) <= loaded("link"), links
        loader.proc.kill()
        loader.proc.wait()
    assert not set(links) & loaded("link"), "the link outlived its loader"
    per_call = callloop(folder, batches=1, calls=200)
    assert per_call[0] < 5000000, per_call
    for _ in range(100):
        if not set(links.values()) & loaded("prog"):
            break
        time.sleep(0.1)
    assert not set(links.values()) & loaded("prog"), "the program outlived its loader"


BAD = [
    (["--ns", "5000001"], "--ns wants a whole number from 0 to 5000000, not '5000001'"),
    (["--mode", "sleep"], "cannot sleep"),
    (["--loops", "300"], "the loop-count mode is the delay module's"),
    (["--syscalls", "400"], "--syscalls wants"),          # a gap of the table
    (["--syscalls", "3-1"], "--syscalls wants"),
    (["--syscalls", "getppid,nosuchcall"], "--syscalls wants"),
    (["--delays", "read:5000001"], "--delays wants"),
    (["--delays", "read:10,read:20"], "--delays wants"),
    (["--delays", "read"], "--delays wants"),
    (["--ppm", "1000001"], "--ppm wants"),
    (["--where", "middle"], "--where wants entry or exit"),
    (["--cgroup", "lab"], "--cgroup wants a path from the cgroup2 root"),
    (["stray"], "unexpected argument"),
]


@pytest.mark.parametrize("args, message", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_a_bad_option_is_one_line_and_status_2(built, args, message):
    out = subprocess.run([built, *args], capture_output=True, text=True, timeout=30)
    assert out.returncode == 2, out.stderr
    assert len(out.stderr.splitlines()) == 1 and message in out.stderr, out.stderr
    assert out.stdout == ""


def test_a_cgroup_that_does_not_exist_is_refused(kernel):
    out = subprocess.run([LOADER, "--cgroup", "/no-such-cgroup-of-bpfdelay"],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and "--cgroup wants a cgroup v2 path" in out.stderr, out.stderr


def cannot(args, message, **kw):
    out = subprocess.run([LOADER, *args], capture_output=True, text=True, timeout=30, **kw)
    assert out.returncode == 1, out.stderr
    assert len(out.stderr.splitlines()) == 1 and message in out.stderr, out.stderr


def test_no_btf_is_one_line_and_status_1(kernel, tmp_path):
    cannot(["--btf", tmp_path / "vmlinux"], f"no BTF at {tmp_path / 'vmlinux'}")


def test_no_cgroup2_mount_is_one_line_and_status_1(kernel, tmp_path):
    mounts = tmp_path / "mounts"
    mounts.write_text("proc /proc proc rw 0 0\ncgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\n")
    cannot(["--cgroup", "/x", "--mounts", mounts], "no cgroup2 (cgroup v2) mount")


def test_not_root_is_one_line_and_status_1(built):
    if os.geteuid() != 0:
        cannot([], "needs root")
        return
    if not shutil.which("setpriv"):
        pytest.skip("no setpriv to drop root")
    out = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                          built, "--ns", "1000"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 1, out.stderr
    assert out.stderr == "bpfdelay: needs root: loading and attaching BPF programs " \
                         "takes CAP_BPF and CAP_PERFMON\n"


def test_a_kernel_without_btf_leaves_it_out_of_the_build():
    """The lab's main job does not need the BPF delay: without BTF, make
    leaves it out with one line and succeeds."""
    out = subprocess.run(["make", "-C", DIR, "-s", "VMLINUX_BTF=/nonexistent/vmlinux"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ("bpfdelay: not built: no BTF at /nonexistent/vmlinux "
                                  "(the BPF delay needs a kernel with CONFIG_DEBUG_INFO_BTF)")
