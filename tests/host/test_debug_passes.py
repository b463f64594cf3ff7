"""make test-debug's passes (debug-passes, with the kernels built): every
pass runs even if one fails, DEBUG_JOBS at once, each its output to its log
and its status to summary.txt, and the run fails naming the passes that
did.  A stand-in for vm.sh says which pass it is and exits as told."""
import shutil
import subprocess

import pytest

STAND_IN = """#!/bin/bash
# vm.sh's stand-in: -- PYTHON -m pytest ... --junitxml=DIR/PASS.xml TESTS
for a; do case $a in --junitxml=*) x=${a#--junitxml=}; p=${x##*/}; p=${p%.xml} ;; esac; done
echo "pass $p: VARIANT=$VARIANT VM_UDEV=$VM_UDEV VM_KLOG=$VM_KLOG VM_APPEND=[$VM_APPEND]" \
	"VM_TCG_THREAD=[$VM_TCG_THREAD]"
echo "command: $*"
sleep 1
case " $FAIL " in *" $p "*) echo "pass $p fails"; exit 3 ;; esac
"""


@pytest.fixture
def passes(root, tmp_path):
    vm = tmp_path / "vm"
    vm.write_text(STAND_IN)
    vm.chmod(0o755)
    logs = tmp_path / "logs"

    def run(fail="", jobs=2, names="faults debug kcsan"):
        return subprocess.run(["make", "-s", "--no-print-directory", "-C", root, "debug-passes",
                               f"VM={vm}", f"DEBUG_LOGS={logs}", f"DEBUG_JOBS={jobs}",
                               f"DEBUG_PASSES={names}", f"FAIL={fail}"],
                              capture_output=True, text=True, timeout=120)
    return run, logs


def test_every_pass_runs_and_says_its_status(passes):
    run, logs = passes
    r = run()
    assert r.returncode == 0, r.stdout + r.stderr
    summary = (logs / "summary.txt").read_text().splitlines()
    assert sorted(line.split()[1] for line in summary) == ["debug:", "faults:", "kcsan:"]
    assert all(" exit status 0 in " in line for line in summary)
    # faults boots the debug kernel; every pass without udevd, its kernel log kept.
    assert "VARIANT=debug VM_UDEV=stop" in (logs / "faults.log").read_text()
    assert f"VARIANT=kcsan VM_UDEV=stop VM_KLOG={logs}/kcsan-kernel.log" in \
        (logs / "kcsan.log").read_text()
    # The debug kernel reports every KASAN finding (not only its first).
    assert "VM_APPEND=[kasan_multi_shot]" in (logs / "faults.log").read_text()
    assert "VM_APPEND=[kasan_multi_shot]" in (logs / "debug.log").read_text()
    assert "VM_APPEND=[]" in (logs / "kcsan.log").read_text()
    # pytest's output goes to PASS.out from the guest too.
    assert f"| tee {logs}/kcsan.out" in (logs / "kcsan.log").read_text()


def test_the_rt_boot_runs_its_vcpus_on_one_host_thread(passes, monkeypatch):
    """rt's vCPUs share a host thread (an rt boot with one a vCPU once died
    without a word); the other passes take vm.sh's default or the caller's."""
    run, logs = passes
    monkeypatch.delenv("VM_TCG_THREAD", raising=False)
    r = run(names="rt kcsan")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "VARIANT=rt " in (logs / "rt.log").read_text()
    assert "VM_TCG_THREAD=[single]" in (logs / "rt.log").read_text()
    assert "VM_TCG_THREAD=[]" in (logs / "kcsan.log").read_text()
    monkeypatch.setenv("VM_TCG_THREAD", "multi")
    shutil.rmtree(logs)
    r = run(names="rt kcsan")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "VM_TCG_THREAD=[single]" in (logs / "rt.log").read_text()
    assert "VM_TCG_THREAD=[multi]" in (logs / "kcsan.log").read_text()


def test_the_rt_pass_runs_the_module_tests(passes):
    """PREEMPT_RT runs the module tests, the sleeping delay's among them,
    beside the variant and stress files; nopreempt does not (it refuses
    mode=sleep)."""
    run, logs = passes
    r = run(names="rt nopreempt")
    assert r.returncode == 0, r.stdout + r.stderr
    rt = (logs / "rt.log").read_text()
    nopreempt = (logs / "nopreempt.log").read_text()
    for name in ("test_variants.py", "test_interfaces_stress.py", "test_delay_module.py",
                 "test_delay_sleep_exit.py", "test_cgroup_target.py"):
        assert f"tests/guest/{name}" in rt, name
    assert "test_delay_sleep_exit.py" not in nopreempt


def test_a_failed_pass_fails_the_run_and_the_others_still_run(passes):
    run, logs = passes
    r = run(fail="faults", jobs=1)
    assert r.returncode != 0
    assert "test-debug: failed: faults" in r.stderr
    summary = (logs / "summary.txt").read_text()
    assert "faults: exit status 2" in summary          # make's status for a failed recipe
    assert "debug: exit status 0" in summary and "kcsan: exit status 0" in summary
    assert "pass faults fails" in (logs / "faults.log").read_text()


def test_passes_run_side_by_side(passes):
    """DEBUG_JOBS=2: the second pass starts before the first one ends."""
    run, logs = passes
    r = run(jobs=2)
    assert r.returncode == 0
    starts = [line for line in r.stdout.splitlines() if ": started " in line]
    assert len(starts) == 3
    first_end = r.stdout.index("exit status")
    assert r.stdout.index(starts[1]) < first_end
