"""scripts/lib.sh's shared argument helpers of the runners (run.sh) and
their guest scripts (guest.sh): what they set, and status 2 with one line
for a bad value."""
import subprocess

import pytest

from conftest import ROOT


def sh(body, *args, env=None):
    script = f'. "{ROOT}/scripts/lib.sh"\n{body}'
    return subprocess.run(["bash", "-c", script, "run.sh", *map(str, args)], capture_output=True,
                          text=True, env=env or {"PATH": "/usr/bin:/bin"})


RUNNER = ("lab_runner_args '-r=5 -n=500 --here --no-analysis --' \"$@\"\n"
          'echo "$RUNS $N $vm $analysis ${#LAB_ARGS[@]} ${LAB_REST[*]}"')


@pytest.mark.parametrize("args, env, printed", [
    ([], None, "5 500 true 1 0"),
    (["-r", "3", "-n", "7", "--here", "--no-analysis"], None, "3 7 false 0 6"),
    (["--repeats", "2", "--", "--size", "16"], None, "2 500 true 1 5 --size 16"),
    ([], {"PATH": "/usr/bin:/bin", "RUNS": "9"}, "9 500 true 1 0"),
])
def test_runner_args_sets_what_it_was_given(args, env, printed):
    out = sh(RUNNER, *args, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == printed


@pytest.mark.parametrize("args, message", [
    (["-r", "0"], "--repeats wants a whole number >= 1, not '0'"),
    (["-n"], "-n wants a value"),
    (["--warmup", "1"], "unknown argument '--warmup'"),
    (["x"], "unknown argument 'x'"),
])
def test_runner_args_refuses_with_status_2(args, message):
    out = sh(RUNNER, *args)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.splitlines() == [f"run.sh: {message} (see --help)"] or \
        out.stderr.splitlines() == [f"run.sh: {message}"]


GUEST = ("lab_guest_args 'RUNS=5:1 N=500:1 OPTS...' \"$@\"\n"
         'echo "$dir $RUNS $N ${LAB_REST[*]}"')


def test_guest_args_sets_defaults_and_the_rest(tmp_path):
    assert sh(GUEST, tmp_path).stdout.strip() == f"{tmp_path} 5 500"
    assert sh(GUEST, tmp_path, 2, 9, "-C", "0").stdout.strip() == f"{tmp_path} 2 9 -C 0"


@pytest.mark.parametrize("args, status, message", [
    ([], 2, "run.sh: usage: run.sh DIR [RUNS [N [OPTS...]]]"),
    (["{dir}", "0"], 2, "run.sh: RUNS wants a whole number >= 1, not '0'"),
    (["{dir}", "1", "x"], 2, "run.sh: N wants a whole number, not 'x'"),
    (["/nonexistent"], 1, "run.sh: error: no result folder /nonexistent (run.sh makes it)"),
])
def test_guest_args_refuses(tmp_path, args, status, message):
    out = sh(GUEST, *[a.format(dir=tmp_path) for a in args])
    assert out.returncode == status and out.stderr.splitlines() == [message], out.stderr


def test_guest_args_without_rest_counts_its_arguments(tmp_path):
    out = sh("lab_guest_args 'N=1:1' \"$@\"", tmp_path, 1, 2)
    assert out.returncode == 2 and out.stderr.strip() == "run.sh: usage: run.sh DIR [N]"


def test_env_uint_defaults_and_checks():
    ok = sh('lab_env_uint RUNS 5 2  BOOTS 2 1\necho "$RUNS $BOOTS"',
            env={"PATH": "/usr/bin:/bin", "BOOTS": "4"})
    assert ok.returncode == 0 and ok.stdout.strip() == "5 4"
    bad = sh("lab_env_uint RUNS 5 2", env={"PATH": "/usr/bin:/bin", "RUNS": "1"})
    assert bad.returncode == 2
    assert bad.stderr.splitlines() == ["run.sh: RUNS wants a whole number >= 2, not '1'"]
