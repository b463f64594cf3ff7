"""scripts/test.sh (make test's passes) with stand-ins for the
virtualenv's Python, vm.sh and make: the host tests, and the timing and
second stock passes, run beside the stock guest pass, their logs are
shown when it ends, and any failed pass fails the whole with its log shown
whole.  No other kernel is built or booted: that is make test-debug's."""
import os
import subprocess

import pytest

# Python's stand-in: says what it was asked to run, in PASSES/<which>.
# The stock pass waits until the host pass has started (they run at once,
# or it gives up); FAIL names a pass that fails.
FAKE_PY = r"""#!/bin/bash
case "$*" in
*"tests/host"*) which=host ;;
*"-m timing"*) which=timing ;;
*"--deselect="*) which=stock ;;
*"not timing"*) which=later-stock ;;
*) which=unknown ;;
esac
echo "$which: $*"
touch "$PASSES/$which"
if [ "$which" = stock ]; then
	for _ in $(seq 100); do [ -e "$PASSES/host" ] && break; sleep 0.1; done
	[ -e "$PASSES/host" ] || { echo "stock: the host pass never started"; exit 3; }
fi
case " $FAIL " in *" $which "*) echo "$which: 1 failed"; exit 1 ;; esac
echo "$which: passed"
"""
# vm.sh's: runs the command after --, in the environment given.
FAKE_VM = r"""#!/bin/bash
[ "$1" = -- ] && shift
echo "vm: VARIANT=${VARIANT:-stock} VM_CLOCK=${VM_CLOCK:-host}" \
	"VM_TCG_THREAD=${VM_TCG_THREAD:-multi} klog=${VM_KLOG##*/}"
exec "$@"
"""
# make's: make test builds no kernel, so it must not be called.
FAKE_MAKE = r"""#!/bin/bash
echo "make $*"
touch "$PASSES/make"
"""


@pytest.fixture
def stand_ins(tmp_path):
    bins = tmp_path / "bin"
    bins.mkdir()
    for name, text in (("python", FAKE_PY), ("vm.sh", FAKE_VM), ("make", FAKE_MAKE)):
        (bins / name).write_text(text)
        (bins / name).chmod(0o755)
    (tmp_path / "passes").mkdir()
    return tmp_path


# Files of the lab's core, which no experiment's deletion takes away.
LATER = "tests/guest/test_vm.py tests/guest/test_delay_module.py"


def run(root, d, fail="", later=LATER, **given):
    env = {k: v for k, v in os.environ.items() if not k.startswith("VM_")}
    env.update(PY=str(d / "bin/python"), VM=str(d / "bin/vm.sh"),
               TEST_LOGS=str(d / "logs"), TEST_CLOCK="virtual",
               STOCK_LATER_TESTS=later,
               PASSES=str(d / "passes"), FAIL=fail,
               PATH=f"{d / 'bin'}:{os.environ['PATH']}", **given)
    return subprocess.run([root / "scripts/test.sh"], env=env, capture_output=True,
                          text=True, timeout=120)


def test_every_pass_runs_the_background_ones_beside_the_stock_one(root, stand_ins):
    out = run(root, stand_ins)
    assert out.returncode == 0, out.stdout + out.stderr
    assert sorted(p.name for p in (stand_ins / "passes").iterdir()) == [
        "host", "later-stock", "stock", "timing"]
    assert "stock: passed" in out.stdout and "test.sh: all passed" in out.stderr
    # The front pass leaves out the files the second stock boot runs.
    assert "stock: -m pytest -q --durations=15 -p no:cacheprovider -m not timing " \
        "--deselect=tests/guest/test_vm.py --deselect=tests/guest/test_delay_module.py " \
        "tests/guest" in out.stdout
    later = (stand_ins / "logs/later.log").read_text()
    # Every guest on one host thread.
    assert "vm: VARIANT=stock VM_CLOCK=virtual VM_TCG_THREAD=single klog=timing-kernel.log" \
        in later
    assert "vm: VARIANT=stock VM_CLOCK=host VM_TCG_THREAD=single klog=stock-later-kernel.log" \
        in later
    assert "vm: VARIANT=stock VM_CLOCK=host VM_TCG_THREAD=single klog=stock-kernel.log" \
        in out.stdout
    assert "later-stock: -m pytest -q --durations=5 -p no:cacheprovider -m not timing " \
        f"{LATER}\n" in later
    assert later.index("timing: passed") < later.index("later-stock: passed")
    assert "VARIANT=rt" not in later + out.stdout + out.stderr
    # The background passes' ends are shown after the stock pass's.
    assert out.stdout.index("stock: passed") < out.stdout.index("host: passed")
    for pass_ in ("host", "later"):
        assert f"test.sh: {pass_}: ended with status 0" in out.stderr


def test_a_given_tcg_threading_is_kept(root, stand_ins):
    out = run(root, stand_ins, VM_TCG_THREAD="multi")
    assert out.returncode == 0, out.stdout + out.stderr
    later = (stand_ins / "logs/later.log").read_text()
    assert "VM_TCG_THREAD=multi klog=stock-kernel.log" in out.stdout
    assert "VM_TCG_THREAD=multi klog=stock-later-kernel.log" in later


def test_the_second_stock_boot_runs_only_files_that_exist(root, stand_ins):
    """A lab without an experiment has no tests of it either."""
    out = run(root, stand_ins, later="tests/guest/test_gone.py tests/guest/test_vm.py")
    assert out.returncode == 0, out.stdout + out.stderr
    later = (stand_ins / "logs/later.log").read_text()
    assert "-m not timing tests/guest/test_vm.py\n" in later
    out = run(root, stand_ins, later="tests/guest/test_gone.py")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "later-stock" not in (stand_ins / "logs/later.log").read_text()


@pytest.mark.parametrize("fail, failed", [("host", "host"), ("stock", "stock"),
                                          ("timing", "later"), ("later-stock", "later"),
                                          ("host timing", "host later")])
def test_a_failed_pass_fails_the_whole_and_shows_its_log(root, stand_ins, fail, failed):
    out = run(root, stand_ins, fail)
    assert out.returncode == 1
    assert out.stderr.rstrip().endswith(f"test.sh: error: failed: {failed}"), out.stderr
    for f in fail.split():
        assert f"{f}: 1 failed" in out.stdout
    # Every other pass runs: the second stock boot after a failed timing
    # pass too.
    ran = {p.name for p in (stand_ins / "passes").iterdir()}
    assert ran == {"host", "stock", "timing", "later-stock"}


def test_a_test_of_a_file_moves_by_its_node_id(root, stand_ins):
    """One test of a file in the second stock boot (a parameter's in
    brackets): the front pass runs the rest of its file."""
    node = "tests/guest/test_sweep.py::test_small_sweep[kbuild-series1]"
    out = run(root, stand_ins, later=f"tests/guest/test_vm.py {node}")
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"--deselect=tests/guest/test_vm.py --deselect={node} tests/guest" in out.stdout
    later = (stand_ins / "logs/later.log").read_text()
    assert f"-m not timing tests/guest/test_vm.py {node}\n" in later
    out = run(root, stand_ins, later="tests/guest/test_gone.py::test_x[a]")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "later-stock" not in (stand_ins / "logs/later.log").read_text()


def test_arguments_are_refused(root):
    out = subprocess.run([root / "scripts/test.sh", "now"], capture_output=True, text=True)
    assert out.returncode == 2 and out.stderr.startswith("test.sh: ")
