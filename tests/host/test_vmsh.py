"""scripts/vm.sh without a VM: a stand-in for virtme-ng (LAB_VENV) that
starts a child as vng starts QEMU.  A Ctrl-C (SIGINT to vm.sh's process
group, as a terminal sends it) or a SIGTERM to vm.sh must stop the guest:
timeout runs it in a process group of its own, which neither reaches."""
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

import pytest
from signals import interrupt

FAKE_VNG = r"""#!/bin/bash
# The stand-in for vng: its child stands for QEMU.
sleep 600 &
echo "$$ $!" >"$FAKE_PIDS"
echo "guest up"
wait
"""


# A stand-in vng's start: the guest's command, from the script on the
# share that vm.sh names in --exec ('sh FILE').
GUEST_CMD = """while [ "$1" != --exec ]; do shift; done
f=${2#sh \\'}; cmd=$(cat "${f%\\'}")
"""


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone for our purpose.
    return "State:\tZ" not in pathlib.Path(f"/proc/{pid}/status").read_text()


def default_sigint():
    """SIGINT as a terminal's foreground job has it (test_labsh.py says why)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture
def fake_vm(tmp_path):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    vng = venv / "bin/vng"
    vng.write_text(FAKE_VNG)
    vng.chmod(0o755)
    kernel = tmp_path / "bzImage"
    kernel.write_text("")
    (tmp_path / "build").mkdir()
    return dict(os.environ, LAB_VENV=str(venv), KERNEL=str(kernel), VM_ACCEL="tcg",
                VM_CLOCK="host", FAKE_PIDS=str(tmp_path / "pids"),
                LAB_BUILD=str(tmp_path / "build"))


@pytest.mark.parametrize("sig, to_group, code", [(signal.SIGINT, True, 130),
                                                 (signal.SIGTERM, False, 143)])
def test_a_signal_stops_the_guest(root, tmp_path, fake_vm, sig, to_group, code):
    p = subprocess.Popen([root / "scripts/vm.sh", "--", "true"], env=fake_vm, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True, preexec_fn=default_sigint)
    pids = tmp_path / "pids"
    for _ in range(600):
        if pids.exists() and pids.read_text().strip():
            break
        time.sleep(0.05)
    else:
        p.kill()
        pytest.fail("the stand-in guest never started")
    vng, qemu = map(int, pids.read_text().split())
    ended = interrupt(p, sig, to_group, 60)
    if ended is None:
        for pid in (vng, qemu):
            if alive(pid):
                os.killpg(os.getpgid(pid), signal.SIGKILL)
        p.kill()
        pytest.fail("vm.sh did not stop")
    out, err = ended
    assert p.returncode == code, err
    assert "stopping the guest" in err
    assert "guest up" in out
    deadline = time.monotonic() + 30
    while (alive(vng) or alive(qemu)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(vng) and not alive(qemu), "the guest outlived vm.sh"


def test_the_guests_status_and_output_come_through(root, tmp_path, fake_vm):
    vng = pathlib.Path(fake_vm["LAB_VENV"]) / "bin/vng"
    vng.write_text('#!/bin/bash\necho "to stdout"; echo "to stderr" >&2; exit 7\n')
    r = subprocess.run([root / "scripts/vm.sh", "--", "true"], env=fake_vm, text=True,
                       capture_output=True, timeout=120)
    assert r.returncode == 7
    assert r.stdout == "to stdout\n" and "to stderr" in r.stderr


def test_the_guest_has_a_tmp_of_its_own(root, tmp_path, fake_vm):
    """The command runs after a tmpfs is mounted on the guest's /tmp (not on
    virtme-ng's overlay of the host's /tmp, which the host changes)."""
    vng = pathlib.Path(fake_vm["LAB_VENV"]) / "bin/vng"
    vng.write_text('#!/bin/bash\n' + GUEST_CMD + 'echo "$cmd"\n')
    r = subprocess.run([root / "scripts/vm.sh", "--", "echo", "a b"], env=fake_vm, text=True,
                       capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    started, cmd = r.stdout.split("; ", 1)
    assert started.startswith("echo started >")
    assert cmd.startswith("mount -t tmpfs -o mode=1777 lab-tmp /tmp && 'echo' 'a b'; ")


def test_udevd_is_stopped_first_when_asked(root, tmp_path, fake_vm):
    vng = pathlib.Path(fake_vm["LAB_VENV"]) / "bin/vng"
    vng.write_text('#!/bin/bash\n' + GUEST_CMD + 'echo "$cmd"\n')
    r = subprocess.run([root / "scripts/vm.sh", "--", "true"], text=True, capture_output=True,
                       env={**fake_vm, "VM_UDEV": "stop"}, timeout=120)
    assert r.returncode == 0, r.stderr
    stop, rest = r.stdout.split("; mount -t tmpfs -o mode=1777 lab-tmp /tmp && 'true'", 1)
    assert stop.split("; ", 1)[1].startswith("pkill -x systemd-udevd; ")
    assert "pgrep -x systemd-udevd" in stop
    assert rest.startswith("; lab_status=$?")
    r = subprocess.run([root / "scripts/vm.sh", "--", "true"], text=True, capture_output=True,
                       env={**fake_vm, "VM_UDEV": "sometimes"}, timeout=120)
    assert r.returncode == 2 and "VM_UDEV must be keep or stop" in r.stderr


def test_a_status_virtme_ng_lost_comes_from_the_share(root, tmp_path, fake_vm):
    """The command ran (on the guest's console) and ended with 3, but vng
    says 255: vm.sh takes the status the command left on the share."""
    vng = pathlib.Path(fake_vm["LAB_VENV"]) / "bin/vng"
    vng.write_text('#!/bin/bash\n' + GUEST_CMD +
                   'sh -c "${cmd/mount -t tmpfs -o mode=1777 lab-tmp \\/tmp \\&\\& /}"\n'
                   'exit 255\n')
    r = subprocess.run([root / "scripts/vm.sh", "--", "sh", "-c", "echo ran; exit 3"],
                       env=fake_vm, text=True, capture_output=True, timeout=120)
    assert r.stdout == "ran\n"
    assert r.returncode == 3, r.stderr
    assert "ended with status 3, which virtme-ng did not bring back" in r.stderr
    assert "ended before its command did" not in r.stderr
    assert not list(pathlib.Path(fake_vm["LAB_BUILD"]).glob(".vm-status.*"))


def die(root, fake_vm, stand_in, klog):
    """vm.sh -- true, its kernel log to KLOG, under a stand-in vng that runs
    STAND_IN and then ends as a guest that died: 255, no status."""
    vng = pathlib.Path(fake_vm["LAB_VENV"]) / "bin/vng"
    vng.write_text("#!/bin/bash\n" + stand_in + "exit 255\n")
    r = subprocess.run([root / "scripts/vm.sh", "--", "true"], text=True, capture_output=True,
                       env={**fake_vm, "VM_KLOG": str(klog)}, timeout=120)
    assert r.returncode == 255, r.stderr
    return r


def test_a_guest_that_dies_is_said_with_its_last_kernel_lines(root, tmp_path, fake_vm):
    """virtme-ng's 255 (no exit status from the guest's command): vm.sh
    says the guest died and shows the end of the kernel log it kept."""
    r = die(root, fake_vm, GUEST_CMD +
            "log=$(sed -n \"s/.*dmesg -w >'\\([^']*\\)'.*/\\1/p\" <<<\"$cmd\")\n"
            "echo 'Kernel panic - not syncing: a test' >>\"$log\"\n",
            tmp_path / "logs/kernel.log")
    # It never started the command: booted once more, and the first
    # boot's kernel log kept beside the second's.
    assert "ended before its command started" in r.stderr
    assert "the guest ended before its command did" in r.stderr
    assert "Kernel panic - not syncing: a test" in r.stderr
    assert "a test" in (tmp_path / "logs/kernel.log.first-boot").read_text()
    assert "holds no oops or panic: QEMU itself may have died" in r.stderr
    # An empty console file is not kept.
    assert not (tmp_path / "logs/kernel.log.console").exists()


def test_a_guest_that_panics_leaves_its_console(root, tmp_path, fake_vm):
    """The kernel writes an oops or panic to a virtio console, a file beside
    the kernel log, which its streamed log never gets: vm.sh shows it when
    the guest dies.  A path QEMU's options could not carry gets none."""
    stand_in = ('echo "$*" >>"$FAKE_PIDS.args"\n'
                'for a; do case $a in *",path="*) con=${a##*,path=} ;; esac; done\n'
                '[ -z "${con:-}" ] || echo "Kernel panic - not syncing: Oops" >>"$con"\n')
    klog = tmp_path / "logs/kernel.log"
    r = die(root, fake_vm, stand_in, klog)
    args = pathlib.Path(fake_vm["FAKE_PIDS"] + ".args").read_text()
    assert "-device virtconsole,bus=lab-klog.0,chardev=lab-klog " \
        f"-chardev file,id=lab-klog,path={klog}.console" in args
    # virtme-ng's console=ttyS0 stays the last, the guest's /dev/console.
    assert "--append console=hvc0 console=ttyS0" in args
    assert f"its console, where an oops or panic is written ({klog}.console)" in r.stderr
    assert "Kernel panic - not syncing: Oops" in r.stderr
    assert "Oops" in (tmp_path / "logs/kernel.log.console.first-boot").read_text()
    assert "Oops" in (tmp_path / "logs/kernel.log.console").read_text()
    r = die(root, fake_vm, stand_in, tmp_path / "a folder/kernel.log")
    assert "no console file: QEMU's options could not carry the path" in r.stderr
    assert not (tmp_path / "a folder/kernel.log.console").exists()
    assert "lab-klog" not in pathlib.Path(fake_vm["FAKE_PIDS"] + ".args").read_text() \
        .splitlines()[-1]


def test_a_guest_that_dies_booting_is_booted_once_more(root, tmp_path, fake_vm):
    """QEMU dies before the command started (vng's 255, no status on the
    share), and the second boot runs it: the command's status is vm.sh's."""
    vng = pathlib.Path(fake_vm["LAB_VENV"]) / "bin/vng"
    vng.write_text("#!/bin/bash\n" + GUEST_CMD +
                   f'if [ ! -e "{tmp_path}/booted" ]; then touch "{tmp_path}/booted"\n'
                   "echo 'qemu-system-x86_64: Assertion failed' >&2; exit 255; fi\n"
                   'sh -c "${cmd/mount -t tmpfs -o mode=1777 lab-tmp \\/tmp \\&\\& /}"\n')
    r = subprocess.run([root / "scripts/vm.sh", "--", "sh", "-c", "echo ran; exit 4"],
                       env=fake_vm, text=True, capture_output=True, timeout=120)
    assert r.returncode == 4, r.stderr
    assert r.stdout == "ran\n"
    assert "ended before its command started" in r.stderr
    assert not list(pathlib.Path(fake_vm["LAB_BUILD"]).glob(".vm-status.*"))


def stand_in_qemu(tmp_path, program):
    """A program named as QEMU is (vm.sh finds the guest's vCPUs by it)."""
    qemu = tmp_path / "bin/qemu-system-x86_64"
    qemu.parent.mkdir(exist_ok=True)
    qemu.write_text(program)
    qemu.chmod(0o755)
    return qemu


def test_a_guest_that_stops_running_is_booted_once_more_then_given_up(root, tmp_path,
                                                                      fake_vm):
    """A QEMU whose vCPUs never run (the stand-in has its main thread
    only) before the command started: after VM_HANG s vm.sh stops it,
    boots once more, and on the second hang gives up with status 1."""
    qemu = stand_in_qemu(tmp_path, "#!/bin/bash\nsleep 600 &\nwait\n")
    vng = pathlib.Path(fake_vm["LAB_VENV"]) / "bin/vng"
    vng.write_text(f'#!/bin/bash\necho boot >>"{tmp_path}/boots"\n{qemu}\n')
    r = subprocess.run([root / "scripts/vm.sh", "--", "true"], text=True, capture_output=True,
                       env={**fake_vm, "VM_HANG": "4"}, timeout=120)
    assert r.returncode == 1, r.stderr
    assert (tmp_path / "boots").read_text() == "boot\nboot\n"
    assert r.stderr.count("have not run for 4 s (VM_HANG): it hung") == 2, r.stderr
    assert "its command had not started: booting it once more" in r.stderr
    assert "error: the guest hung (no vCPU ran for 4 s)" in r.stderr
    assert not list(pathlib.Path(fake_vm["LAB_BUILD"]).glob(".vm-status.*"))


def test_a_guest_whose_vcpus_run_is_left_alone(root, tmp_path, fake_vm):
    """A vCPU thread that keeps running for 12 s, well past VM_HANG: the
    guest ends as it would."""
    spin = ("import threading, time\n"
            "def spin():\n    end = time.time() + 12\n    while time.time() < end: pass\n"
            "t = threading.Thread(target=spin); t.start(); t.join()\n")
    qemu = stand_in_qemu(tmp_path, "")
    qemu.unlink()
    qemu.symlink_to(sys.executable)
    vng = pathlib.Path(fake_vm["LAB_VENV"]) / "bin/vng"
    vng.write_text(f"#!/bin/bash\n{qemu} -c '{spin}'\n")
    r = subprocess.run([root / "scripts/vm.sh", "--", "true"], text=True, capture_output=True,
                       env={**fake_vm, "VM_HANG": "4"}, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "hung" not in r.stderr


def test_a_long_command_reaches_the_guest_whole(root, tmp_path, fake_vm):
    """The kernel command line, where virtme-ng puts --exec, ends at 2048
    bytes on x86: a 5000-byte command goes in a script on the share, and
    --exec only names it."""
    vng = pathlib.Path(fake_vm["LAB_VENV"]) / "bin/vng"
    vng.write_text('#!/bin/bash\n' + GUEST_CMD + 'echo "${#2}"; printf "%s" "$cmd"\n')
    long_arg = "x" * 5000
    r = subprocess.run([root / "scripts/vm.sh", "--", "echo", long_arg], env=fake_vm,
                       text=True, capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    length, cmd = r.stdout.split("\n", 1)
    assert int(length) < 200
    assert f"'echo' '{long_arg}'" in cmd
    assert not list(pathlib.Path(fake_vm["LAB_BUILD"]).glob(".vm-*"))


def test_the_root_and_a_venv_on_a_share_are_read_through_a_cache(root, tmp_path, fake_vm):
    """The root is mounted with 9p's loose cache (the rootflags= vm.sh
    appends, after virtme-ng's own), and a venv under a read-write share
    (here build/) is bound from the root's cached view before the command
    runs; a venv elsewhere is on the root already and is left alone."""
    vng = pathlib.Path(fake_vm["LAB_VENV"]) / "bin/vng"
    vng.write_text('#!/bin/bash\necho "$*" >"$FAKE_ARGS"\n' + GUEST_CMD + 'echo "$cmd"\n')
    env = {**fake_vm, "FAKE_ARGS": str(tmp_path / "args")}
    r = subprocess.run([root / "scripts/vm.sh", "--", "true"], env=env, text=True,
                       capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    args = (tmp_path / "args").read_text()
    assert args.index("--force-9p") < args.index(",cache=loose")
    assert "mount --bind" not in r.stdout
    shared_venv = tmp_path / "build/venv"
    shutil.copytree(fake_vm["LAB_VENV"], shared_venv)
    r = subprocess.run([root / "scripts/vm.sh", "--", "true"], text=True, capture_output=True,
                       env={**env, "LAB_VENV": str(shared_venv)}, timeout=120)
    assert r.returncode == 0, r.stderr
    bind, rest = r.stdout.split("; mount -t tmpfs -o mode=1777 lab-tmp /tmp && 'true'", 1)
    assert ("mount --bind / /run/lab-root && mount --bind "
            f"'/run/lab-root{shared_venv}' '{shared_venv}' ||") in bind


@pytest.mark.parametrize("given, cpus", [({}, "1"), ({"VM_CPUS": "2"}, "2")])
def test_the_vcpus_said_are_the_vcpus_booted(root, tmp_path, fake_vm, given, cpus):
    """On the virtual clock VM_VIRTUAL_CPUS stands in for an unset VM_CPUS:
    the line vm.sh says is the count it passes on (the runners said 2
    where 1 booted)."""
    vng = pathlib.Path(fake_vm["LAB_VENV"]) / "bin/vng"
    vng.write_text('#!/bin/bash\nwhile [ "$1" != --cpus ]; do shift; done\necho "cpus=$2"\n')
    env = {k: v for k, v in fake_vm.items() if k != "VM_CPUS"}
    env.update(VM_CLOCK="virtual", VM_VIRTUAL_CPUS="1", VM_MEM="3G", **given)
    r = subprocess.run([root / "scripts/vm.sh", "--", "true"], env=env, text=True,
                       capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"cpus={cpus}\n"
    assert f"vm.sh: guest: vCPUs {cpus}, memory 3G" in r.stderr
