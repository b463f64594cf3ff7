"""The sweep's staging (lablib.sweep.stage, lablib/strace.py): what a
command touched, read from its strace log, and copied into a root where
the command, chrooted, does and prints the same."""
import hashlib
import json
import os
import shutil
import subprocess

import pytest

from conftest import ROOT
from resultdirs import calibrate_dir

from lablib.readers import strace
from lablib.sweep import stage as stage_module

STAGE = "lablib.sweep.stage"
PY = ROOT / ".venv/bin/python"
TRACE = ["-f", "-y", "-qq", "-e", "trace=%file,%process,chdir,fchdir"]


def parse(text):
    log = strace.Log()
    for line in text.strip().splitlines():
        log.feed(line.strip())
    return log


def test_paths_are_resolved_against_the_directory_each_process_was_in():
    log = parse(r'''
        10  openat(AT_FDCWD</w>, "a.c", O_RDONLY) = 3</w/a.c>
        10  newfstatat(AT_FDCWD</w>, "../etc/b.h", {st_mode=S_IFREG|0644, ...}, 0) = 0
        10  openat(AT_FDCWD</w>, "gone", O_RDONLY) = -1 ENOENT (No such file or directory)
        10  clone(child_stack=NULL, flags=SIGCHLD) = 11
        11  chdir("sub") = 0
        11  access("x/y", R_OK) = 0
        11  execve("./tool", ["./tool"], 0x7ff /* 3 vars */) = 0
        10  openat(AT_FDCWD</w>, "lib", O_RDONLY|O_DIRECTORY <unfinished ...>
        11  readlink("/proc/self/exe", "/w/sub/tool", 4096) = 11
        10  <... openat resumed>) = 4</w/lib>
        10  newfstatat(4</w/lib>, "c.h", {st_mode=S_IFREG|0644, ...}, 0) = 0
        10  openat(AT_FDCWD</w>, "sp\x61ce \"q\".txt", O_RDONLY) = 5</w/space "q".txt>
    ''')
    assert log.paths == {"/w/a.c", "/etc/b.h", "/w/sub", "/w/sub/x/y", "/w/sub/tool",
                         "/w/lib", "/w/lib/c.h", "/proc/self/exe", '/w/space "q".txt'}
    assert log.dirs_read == {"/w/lib"}
    assert log.execs == {"/w/sub/tool"}
    assert log.calls == 11


def test_the_addresses_off_this_machine_a_command_reached_for_are_kept():
    """connect() and sendto() to another machine, tried whatever came of
    it (a connection in progress, a refusal), are kept; to loopback or a
    local socket they are not."""
    inet = "{sa_family=AF_INET, sin_port=htons(%d), sin_addr=inet_addr(\"%s\")}, 16"
    inet6 = ("{sa_family=AF_INET6, sin6_port=htons(%d), sin6_flowinfo=htonl(0), "
             "inet_pton(AF_INET6, \"%s\", &sin6_addr), sin6_scope_id=0}, 28")
    log = parse("\n".join([
        f"10  connect(3<socket:[7]>, {inet % (80, '192.0.2.1')}) = -1 EINPROGRESS (...)",
        f"10  connect(4<socket:[8]>, {inet % (8080, '127.0.0.1')}) = 0",
        f"10  sendto(5<socket:[9]>, \"q\", 1, 0, {inet6 % (53, '2001:db8::53')}) = -1 "
        "ENETUNREACH (Network is unreachable)",
        f"10  connect(6<socket:[10]>, {inet6 % (22, '::1')}) = 0",
        '10  connect(7<socket:[11]>, {sa_family=AF_UNIX, sun_path="/run/x.sock"}, 110) = 0']))
    assert log.network == {"192.0.2.1:80", "[2001:db8::53]:53"}


def stage(dest, *args):
    return subprocess.run([PY, "-m", STAGE, dest, *map(str, args)], capture_output=True,
                          text=True)


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("strace"),
                    reason="needs root (chroot) and strace")
def test_a_staged_command_runs_the_same_chrooted(tmp_path):
    """A shell script reads a file through a link, lists a folder, runs
    programs and a script of its own (#!/bin/sh: the kernel reads the
    interpreter, with no system call strace could show): staged from its
    strace log, it runs chrooted and prints the same; an entry it only
    listed is there by name and time."""
    tree = tmp_path / "tree"
    (tree / "d").mkdir(parents=True)
    (tree / "data.txt").write_text("forty-two\n")
    (tree / "link").symlink_to("data.txt")
    (tree / "d/listed-only").write_text("never read\n")
    os.utime(tree / "d/listed-only", ns=(10**18, 10**18))
    (tree / "run").write_text("#!/bin/sh\necho from a script\n")
    (tree / "run").chmod(0o755)
    script = f"cd {tree} && cat link && ls d && wc -c < data.txt && ./run"
    log = tmp_path / "strace.log"
    traced = subprocess.run(["strace", *TRACE, "-o", log, "bash", "-c", script],
                            capture_output=True, text=True, check=True)
    root = tmp_path / "root"
    root.mkdir()
    out = stage(root, "--log", log, "--json", tmp_path / "stage.json")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("staged ")
    staged = root / str(tree).lstrip("/")
    assert (staged / "link").is_symlink() and os.readlink(staged / "link") == "data.txt"
    assert (staged / "d/listed-only").read_text() == ""
    assert (staged / "d/listed-only").stat().st_mtime_ns == 10**18
    assert (root / "usr/bin/bash").exists() and (root / "usr/bin/wc").exists()
    if shutil.which("dpkg-query"):
        assert "bash" in json.loads((tmp_path / "stage.json").read_text())["packages"]
    chrooted = subprocess.run(["chroot", root, "bash", "-c", script],
                              capture_output=True, text=True)
    assert chrooted.returncode == 0, chrooted.stderr
    assert chrooted.stdout == traced.stdout == "forty-two\nlisted-only\n10\nfrom a script\n"


FAKE_DPKG_QUERY = r"""#!/bin/sh
# dpkg-query -S PATH... and -W -f FORMAT NAME..., as Debian's answers.
if [ "$1" = -S ]; then
	shift
	for p; do
		case $p in
		/lib/x86_64-linux-gnu/libc.so.6) echo "libc6:amd64: $p" ;;
		/usr/bin/gcc-12) echo "gcc-12: $p" ;;
		/usr/bin/diverted) echo "diversion by x from: $p"; echo "pkg-a, pkg-b: $p" ;;
		*) echo "dpkg-query: no path found matching pattern $p" >&2; status=1 ;;
		esac
	done
	exit ${status:-0}
fi
shift 3
for n; do printf '%s\t%s\n' "$n" "1.$n"; done
"""


def test_the_packages_of_what_runs_are_dpkgs_owners(tmp_path, monkeypatch):
    """A staged program's package is the one dpkg says owns it, found
    under the path it shipped at (/lib, not /usr/lib: usrmerge), its
    architecture off; a path no package owns adds none; without
    dpkg-query, none at all."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "dpkg-query"
    fake.write_text(FAKE_DPKG_QUERY)
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    packages = stage_module.packages
    got = packages({"/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/bin/gcc-12",
                    "/usr/bin/diverted", "/opt/mine"})
    assert got == {"gcc-12": "1.gcc-12", "libc6": "1.libc6", "pkg-a": "1.pkg-a",
                   "pkg-b": "1.pkg-b"}
    assert packages({"/opt/mine"}) == {}
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert packages({"/usr/bin/gcc-12"}) == {}


def test_a_root_that_is_not_a_folder_is_one_line(tmp_path):
    out = stage(tmp_path / "missing", "--log", tmp_path / "none.log")
    assert out.returncode == 1
    assert out.stderr.count("\n") == 1 and "is not a folder" in out.stderr


def stage_only(*args, tmp_path, env=None, cwd=None):
    """lab sweep's --stage-only for a VM on the virtual clock (a stand-in
    that only says so)."""
    vm = tmp_path / "vm"
    vm.write_text("#!/bin/sh\necho virtual\n")
    vm.chmod(0o755)
    return subprocess.run([PY, "-m", "lablib.sweep.driver", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd,
                          env={**(env or os.environ), "LAB_VM": str(vm),
                               "LAB_BUILD": str(tmp_path / "build")})


@pytest.mark.skipif(not shutil.which("strace")
                    or not (ROOT / "build/src/linux-source-6.12/kernel").is_dir(),
                    reason="needs strace and the unpacked kernel tree (make kernel)")
def test_stage_only_on_the_host_takes_the_vms_calibration(tmp_path):
    """lab sweep stages on the host (--stage-only) with the plan of the
    sweep in the VM, a --calibration taken on the virtual clock among its
    options: the host is not where that sweep runs, so its clock is no
    reason to refuse it."""
    cal = tmp_path / "cal"
    calibrate_dir(cal, {"getppid": (600, 3.0)})
    meta = json.loads((cal / "meta.json").read_text())
    meta["machine"] = {**(meta.get("machine") or {}), "clock": {"kind": "virtual", "shift": 0}}
    (cal / "meta.json").write_text(json.dumps(meta))
    analysed = subprocess.run([PY, "-m", "lablib.calibrate.analyse", cal, "--no-plot"],
                              capture_output=True, text=True)
    assert analysed.returncode == 0, analysed.stderr
    out = stage_only("grep", "--scale", "small", "--calibration", cal, "--stage-only",
                     tmp_path / "stage", tmp_path=tmp_path)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "stage/grep.tar").stat().st_size > 0
    assert json.loads((tmp_path / "stage/grep.json").read_text())["files"] > 0


@pytest.mark.skipif(not (ROOT / "build/src/linux-source-6.12/kernel").is_dir(),
                    reason="needs the unpacked kernel tree (make kernel)")
def test_failed_stage_only_leaves_nothing_half_made(tmp_path):
    """A recording that fails (here: an strace that fails) stops
    --stage-only with its error and leaves no half-copied root or
    half-written archive in the folder."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "strace").write_text("#!/bin/sh\nexit 1\n")
    (fake / "strace").chmod(0o755)
    env = dict(os.environ, PATH=f"{fake}:{os.environ['PATH']}")
    out = stage_only("grep", "--scale", "small", "--stage-only", tmp_path / "stage",
                     tmp_path=tmp_path, env=env)
    assert out.returncode == 1 and "the grep run under strace failed" in out.stderr, out.stderr
    assert list((tmp_path / "stage").iterdir()) == []


@pytest.mark.skipif(not shutil.which("strace"), reason="needs strace")
def test_stage_only_records_a_command_in_its_folder(tmp_path):
    """cmd --stage-only (what lab sweep runs on the host): the
    command recorded in the folder it was given in, its files and that
    folder in the archive, with the digest of what it printed and the
    key of what was staged, which another command or folder does not
    share."""
    work = tmp_path / "a folder"
    work.mkdir()
    (work / "in.txt").write_text("some input\n")

    def stage_cmd(cwd, *command):
        out = stage_only("cmd", "--stage-only", tmp_path / "stage", "--", *command,
                         tmp_path=tmp_path, cwd=cwd)
        assert out.returncode == 0, out.stderr
        return json.loads((tmp_path / "stage/cmd.json").read_text())

    info = stage_cmd(work, "md5sum", "in.txt")
    names = subprocess.run(["tar", "-tf", tmp_path / "stage/cmd.tar"], capture_output=True,
                           text=True, check=True).stdout.splitlines()
    assert f".{work}/in.txt" in names and "./usr/bin/md5sum" in names, names
    assert "./usr/sbin/chroot" in names and "./usr/bin/env" in names
    printed = subprocess.run(["md5sum", "in.txt"], capture_output=True, cwd=work).stdout
    assert info["output_sha256"] == hashlib.sha256(printed).hexdigest()
    assert info["network"] == [] and len(info["key"]) == 64
    assert stage_cmd(work, "md5sum", "./in.txt")["key"] != info["key"]
    assert stage_cmd(tmp_path, "md5sum", "a folder/in.txt")["key"] != info["key"]
    assert stage_cmd(work, "md5sum", "in.txt")["key"] == info["key"]


def test_staging_on_a_machine_without_jq_says_what_to_install(tmp_path):
    """The runner reads a staged archive's description with jq: where it
    is missing, staging stops in one line before it mounts anything
    (mkdir and mount stand-ins that fail keep this machine's /run as it
    is, whatever the runner does)."""
    bare = tmp_path / "bin"
    bare.mkdir()
    for name in ("mkdir", "mount"):
        (bare / name).write_text("#!/bin/sh\nexit 1\n")
        (bare / name).chmod(0o755)
    for d in ("/usr/local/bin", "/usr/bin", "/bin"):
        for name in os.listdir(d) if os.path.isdir(d) else ():
            if name != "jq" and not (bare / name).exists():
                (bare / name).symlink_to(os.path.join(d, name))
    out = subprocess.run(["bash", "-c", '. scripts/lib.sh; . workloads/lib/staging.sh; '
                          'PATH=$1; stage_workload', "runner", str(bare)],
                         cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 1, out.stderr
    assert out.stderr.strip().splitlines() == ["runner: error: staging needs jq ('make deps')"]
