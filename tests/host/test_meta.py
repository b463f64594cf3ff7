"""meta.json has one writer, liblab: a C tool, the shell's 'lab meta' and
a Python tool (lablib.rtcompare.squarewave, through the lab helper) write
the same keys and the same kernel and machine on the same machine, and all
three read what scripts/vm.sh puts on the kernel command line."""
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

# What describes the machine and the run, not the tool: the same for all.
SHARED = ("lab_commit", "kernel", "machine", "modules")
# The Python tool, as a module of lablib.
SQUAREWAVE_PY = [sys.executable, "-m", "lablib.rtcompare.squarewave"]
CMDLINE = ("lab.variant=rt lab.accel=tcg lab.accel_why=KVM_hangs_here lab.qemu=10.0.2 "
           "lab.commit=0123456789abcdef0123456789abcdef01234567 lab.clock=virtual "
           "lab.icount_shift=0")


@pytest.fixture(scope="module")
def built(root):
    for folder in ("userspace/lib", "userspace/rtcompare"):
        subprocess.run(["make", "-s", "-C", root / folder], check=True)
    return root / "userspace"


def three_metas(built, out, prefix=()):
    """meta.json as written by C (squarewave), by shell (lab begin, lab
    meta, lab commit) and by Python (lablib.rtcompare.squarewave), each
    run through @prefix (a command that runs the next one)."""
    prefix = list(prefix)
    wave = ["-q", "-f", "500", "-n", "3", "-o", out]

    def run(*cmd):
        r = subprocess.run([*prefix, *map(str, cmd)], capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, r.stderr
        return r.stdout.strip()

    run(built / "rtcompare/squarewave", *wave, "--name", "c")
    run(*SQUAREWAVE_PY, *wave, "--name", "python")
    lab = built / "lib/lab"
    d = run(lab, "begin", out, "squarewave", "shell")
    run(lab, "meta", d, "squarewave", "impl=shell", "freqs_hz:=[500]", "--", "sh", "-c", "x")
    run(lab, "commit", d)
    return {k: json.loads((out / k / "meta.json").read_text())
            for k in ("c", "shell", "python")}


def test_c_shell_and_python_write_the_same_meta(built, tmp_path):
    metas = three_metas(built, tmp_path)
    c = metas["c"]
    for who, meta in metas.items():
        assert list(meta) == list(c), f"{who}'s keys, in order"
        assert meta["experiment"] == "squarewave"
        for key in SHARED:
            assert meta[key] == c[key], f"{who}'s {key} differs from C's"
        assert meta["date"].endswith("Z") and len(meta["date"]) == 20
    assert metas["python"]["command"] == [*SQUAREWAVE_PY, "-q", "-f", "500", "-n", "3", "-o",
                                          str(tmp_path), "--name", "python"]
    assert metas["shell"]["command"] == ["sh", "-c", "x"]
    # lablib.rtcompare.analyse reads both implementations' settings alike.
    assert list(metas["python"]["settings"]) == list(c["settings"])
    assert metas["python"]["settings"]["impl"] == "python"
    assert metas["shell"]["settings"] == {"impl": "shell", "freqs_hz": [500]}
    assert c["kernel"]["release"] == os.uname().release
    assert c["machine"]["cpus"] == os.cpu_count()
    # What the kernel says of each CPU vulnerability: the mitigations in force.
    vuln = pathlib.Path("/sys/devices/system/cpu/vulnerabilities")
    assert c["kernel"]["mitigations"] == {f.name: f.read_text().strip() for f in
                                          sorted(vuln.iterdir())} if vuln.is_dir() else {}


def can_fake_cmdline(tmp_path):
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return False
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount --bind /dev/null /proc/cmdline"],
                           capture_output=True)
    return probe.returncode == 0


def test_every_writer_reads_the_kernel_command_line(built, tmp_path):
    """In the VM scripts/vm.sh says the accelerator, variant, commit and
    clock on the kernel command line; TCG sets no hypervisor flag, so a
    writer that does not read them says 'none'.  Here the command line is
    a file bound over /proc/cmdline in a mount namespace of the test's own."""
    if not can_fake_cmdline(tmp_path):
        pytest.skip("needs root and unshare -m to bind a file over /proc/cmdline")
    cmdline = tmp_path / "cmdline"
    cmdline.write_text(f"console=ttyS0 {CMDLINE}\n")
    out = tmp_path / "out"
    wrapper = ["unshare", "-m", "sh", "-c", f"mount --bind {cmdline} /proc/cmdline && exec \"$@\"",
               "sh"]
    for who, meta in three_metas(built, out, wrapper).items():
        m = meta["machine"]
        assert m["accelerator"] == "tcg" and m["virtual"] is True, who
        assert m["accelerator_why"] == "KVM hangs here" and m["qemu"] == "10.0.2", who
        assert m["clock"] == {"kind": "virtual", "shift": 0}, who
        assert meta["kernel"]["variant"] == "rt", who
        assert meta["kernel"]["cmdline"] == f"console=ttyS0 {CMDLINE}", who
        assert meta["lab_commit"] == "0123456789abcdef0123456789abcdef01234567", who


def test_python_result_folders_keep_the_life_cycle(built, tmp_path):
    """lablib.rtcompare.squarewave's folders are liblab's: time-stamped
    ones become latest-squarewave, a taken name gets -2, named ones make no
    link, and nothing is left .incomplete."""
    py = [*SQUAREWAVE_PY, "-q", "-f", "500", "-n", "2", "-o", tmp_path]
    first = subprocess.run(py, capture_output=True, text=True, check=True).stdout.strip()
    assert pathlib.Path(first).name.startswith("squarewave-")
    assert os.readlink(tmp_path / "latest-squarewave") == pathlib.Path(first).name
    for expected in ("cell", "cell-2"):
        out = subprocess.run([*py, "--name", "cell"], capture_output=True, text=True, check=True)
        assert out.stdout.strip() == str(tmp_path / expected)
    assert os.readlink(tmp_path / "latest-squarewave") == pathlib.Path(first).name
    assert not [p for p in tmp_path.iterdir() if ".incomplete" in p.name or ".tmp" in p.name]


def test_python_folder_that_cannot_be_made_is_one_line(built, tmp_path):
    (tmp_path / "file").write_text("")
    out = subprocess.run([*SQUAREWAVE_PY, "-q", "-f", "500", "-n", "2", "-o",
                          tmp_path / "file/sub"], capture_output=True, text=True)
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr == (f"python -m lablib.rtcompare.squarewave: error: lab: cannot create "
                          f"a result folder in {tmp_path}/file/sub: Not a directory\n")
