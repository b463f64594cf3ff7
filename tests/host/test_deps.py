"""scripts/deps.sh as on a bare Debian machine: no QEMU on PATH and no
package reported installed.  CI runs on a machine where everything is
already there, so only this test sees what a new user's 'make' would do."""
import os
import subprocess

import pytest

PACKAGES_NEEDED = ["linux-source-6.12", "quilt", "flex", "bison", "ccache", "trace-cmd",
                   "apache2-bin", "httperf", "redis-tools", "parallel", "gcc-multilib",
                   "shellcheck", "chromium",
                   "udev", "python3-venv", "jq", "strace", "linux-perf", "rt-tests",
                   "libseccomp-dev", "auditd", "bpftrace",
                   # the BPF delay (userspace/bpfdelay), and pahole for the
                   # BTF of its kernel variant (config/variants/bpf.config)
                   "clang", "libbpf-dev", "bpftool", "dwarves",
                   # make deb: the kernel's bindeb-pkg and its declared build dependency
                   "dpkg-dev", "rsync", "debhelper"]


@pytest.fixture
def bare_path(tmp_path):
    """A PATH with every command of this machine but QEMU, and stubs for
    dpkg-query (nothing is installed) and apt-get (records its calls)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for d in ("/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"):
        if not os.path.isdir(d):
            continue
        for name in os.listdir(d):
            if name.startswith("qemu") or (bin_dir / name).exists():
                continue
            (bin_dir / name).symlink_to(os.path.join(d, name))
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    log = tmp_path / "apt.log"
    (stubs / "dpkg-query").write_text("#!/bin/sh\nexit 1\n")
    (stubs / "apt-get").write_text(f'#!/bin/sh\necho "$*" >>{log}\nexit "${{APT_STATUS:-0}}"\n')
    for stub in stubs.iterdir():
        stub.chmod(0o755)
    return f"{stubs}:{bin_dir}", log


def deps(root, path, *args, **env):
    return subprocess.run(["bash", root / "scripts/deps.sh", *args], capture_output=True,
                          text=True, env=dict(os.environ, PATH=path, **env))


def test_no_qemu_on_path(bare_path):
    path, _ = bare_path
    out = subprocess.run(["bash", "-c", "command -v qemu-system-x86_64"], env={"PATH": path})
    assert out.returncode != 0, "the simulated machine must not have QEMU"


def test_dry_run_on_a_bare_machine_lists_everything(root, bare_path):
    path, log = bare_path
    out = deps(root, path, "--dry-run")
    assert out.returncode == 0, out.stderr
    assert "found: none" in out.stderr
    installs = [ln for ln in out.stdout.splitlines() if "apt-get install" in ln]
    assert any(ln.endswith("qemu-system-x86") for ln in installs), out.stdout
    listed = " ".join(installs).split()
    for package in PACKAGES_NEEDED:
        assert package in listed, package
    assert not log.exists(), "a dry run must not call apt-get"


def test_a_workloads_packages_come_from_its_file(root, bare_path, tmp_path):
    """A workload declares its packages in its own file (WL_PACKAGES): one
    of one's own, in LAB_WORKLOADS_DIR, is installed with the lab's."""
    path, _ = bare_path
    own = tmp_path / "own"
    own.mkdir()
    (own / "toy.sh").write_text('WL_ABOUT="a toy"\nWL_PACKAGES="lighttpd cowsay"\n')
    listed = " ".join(ln for ln in deps(root, path, "--dry-run", LAB_WORKLOADS_DIR=own)
                      .stdout.splitlines() if "apt-get install" in ln).split()
    assert "lighttpd" in listed and "cowsay" in listed and "apache2-bin" in listed
    listed = deps(root, path, "--dry-run").stdout.split()
    assert "lighttpd" not in listed and "cowsay" not in listed


def test_bpf_tools_come_from_backports_on_bookworm(root, bare_path):
    """libbpf-dev and bpftool from bookworm-backports (libbpf 1.4, bpftool
    7.5), as the QEMU the lab trusts; clang from Debian 12 itself."""
    release = dict(ln.split("=", 1) for ln in open("/etc/os-release").read().splitlines()
                   if "=" in ln)
    if release.get("VERSION_CODENAME") != "bookworm":
        pytest.skip("bookworm-backports is Debian 12's")
    path, _ = bare_path
    out = deps(root, path, "--dry-run")
    bpf = [ln for ln in out.stdout.splitlines() if "apt-get install" in ln and "libbpf-dev" in ln]
    assert len(bpf) == 1 and "-t bookworm-backports" in bpf[0] and "bpftool" in bpf[0], out.stdout
    clang = [ln for ln in out.stdout.splitlines() if "apt-get install" in ln and " clang" in ln]
    assert clang and "-t bookworm-backports" not in clang[0], out.stdout


def test_install_on_a_bare_machine_calls_apt(root, bare_path):
    if os.geteuid() != 0:
        pytest.skip("deps.sh installs as root")
    path, log = bare_path
    out = deps(root, path)
    assert out.returncode == 0, out.stderr
    calls = log.read_text().splitlines()
    assert any("qemu-system-x86" in c for c in calls)
    assert any("linux-source-6.12" in c and "rt-tests" in c for c in calls), calls


def test_a_failing_install_says_what_failed(root, bare_path):
    if os.geteuid() != 0:
        pytest.skip("deps.sh installs as root")
    path, _ = bare_path
    out = deps(root, path, APT_STATUS="100")
    assert out.returncode != 0
    # Not a bare exit status: the line and command that failed are named.
    assert "deps.sh: error: exit status 100 from:" in out.stderr, out.stderr
    assert "apt-get install" in out.stderr


def test_bad_option_is_refused(root, bare_path):
    path, _ = bare_path
    out = deps(root, path, "--bogus")
    assert out.returncode != 0 and "unknown option" in out.stderr


def test_make_deps_reaches_the_script(root, bare_path, tmp_path):
    """The README's first command starts with 'make deps': on a bare machine
    it must get as far as deps.sh and report, not stop at a missing tool."""
    path, _ = bare_path
    out = subprocess.run(["make", "-C", root, "-s", "deps", "SHELL=/bin/bash"],
                         capture_output=True, text=True,
                         env=dict(os.environ, PATH=path, DEPS_FLAGS="--dry-run"))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "would run:" in out.stdout


def path_without(tmp_path, prefix, stubs=None):
    """A PATH with every command of this machine but those whose names
    start with @prefix, and @stubs {name: shell script} before them."""
    bin_dir = tmp_path / "nopy"
    bin_dir.mkdir()
    for d in ("/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"):
        if os.path.isdir(d):
            for name in os.listdir(d):
                if not name.startswith(prefix) and not (bin_dir / name).exists():
                    (bin_dir / name).symlink_to(os.path.join(d, name))
    for name, text in (stubs or {}).items():
        (bin_dir / name).unlink(missing_ok=True)
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    return str(bin_dir)


@pytest.mark.parametrize("stubs, message", [
    ({}, "make venv: no python3 on this machine; run 'make deps' first"),
    ({"python3": "#!/bin/sh\necho 'No module named ensurepip' >&2\nexit 1\n"},
     "make venv: this python3 cannot make a virtualenv (no ensurepip); run 'make deps'"),
])
def test_make_venv_on_a_bare_machine_says_what_to_run(root, tmp_path, stubs, message):
    """No python3, or one without venv's ensurepip (Debian's python3-venv):
    make venv says to run make deps, in one line, and makes nothing."""
    venv = tmp_path / "venv"
    out = subprocess.run(["make", "-C", root, "-s", "venv", f"VENV={venv}", "SHELL=/bin/bash"],
                         capture_output=True, text=True,
                         env=dict(os.environ, PATH=path_without(tmp_path, "python", stubs)))
    assert out.returncode != 0
    assert message in out.stderr, out.stderr
    assert not venv.exists()
