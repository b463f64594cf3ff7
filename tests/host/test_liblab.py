"""liblab's statistics and fit code, through its TAP unit tests."""
import pathlib
import re
import subprocess


def test_liblab_unit_tests(root):
    subprocess.run(["make", "-s", "-C", root / "userspace/lib", "test_lab"], check=True)
    out = subprocess.run([root / "userspace/lib/test_lab"], capture_output=True, text=True)
    lines = out.stdout.splitlines()
    plan = [ln for ln in lines if re.fullmatch(r"1\.\.\d+", ln)]
    assert plan, f"no TAP plan in:\n{out.stdout}"
    planned = int(plan[0][3:])
    results = [ln for ln in lines if re.match(r"(not )?ok \d+", ln)]
    failed = [ln for ln in lines if ln.startswith("not ok")]
    assert not failed, "\n".join(failed + [ln for ln in lines if ln.startswith("#")])
    assert len(results) == planned >= 40
    assert out.returncode == 0


# --- 'lab': liblab for the shell scripts -----------------------------------

import json  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture(scope="module")
def lab(root):
    subprocess.run(["make", "-s", "-C", root / "userspace/lib", "lab"], check=True)
    return root / "userspace/lib/lab"


def run(lab, *args):
    return subprocess.run([lab, *map(str, args)], capture_output=True, text=True)


@pytest.mark.parametrize("text, numbers", [
    ("0,50,100", [0, 50, 100]), ("0:700:350", [0, 350, 700]), ("0:10:4,40", [0, 4, 8, 40]),
    ("7", [7]), ("5:5:1", [5]),
])
def test_list_expands_the_one_syntax(lab, text, numbers):
    out = run(lab, "list", text)
    assert out.returncode == 0, out.stderr
    assert [int(x) for x in out.stdout.split()] == numbers


@pytest.mark.parametrize("text", ["", "a", "1,,2", "10:0:5", "0:10:0", "-1", "1:2", "1,2,",
                                  "0x10", "1 2"])
def test_list_refuses_malformed_lists(lab, text):
    out = run(lab, "list", text)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.startswith("lab: ") and len(out.stderr.splitlines()) == 1


def test_list_enforces_a_maximum(lab):
    assert run(lab, "list", "0,1000", "1000").returncode == 0
    out = run(lab, "list", "0,1001", "1000")
    assert out.returncode == 2 and "above the largest allowed" in out.stderr


def test_begin_then_commit_makes_a_result_and_a_latest_link(lab, tmp_path):
    first = run(lab, "begin", tmp_path, "demo").stdout.strip()
    assert first.endswith(".incomplete") and os.path.isdir(first)
    assert not (tmp_path / "latest-demo").exists(), "no link before it is complete"
    second = run(lab, "begin", tmp_path, "demo").stdout.strip()
    assert second != first, "two runs in the same second get two folders"
    final = run(lab, "commit", first, "demo").stdout.strip()
    assert final == first.removesuffix(".incomplete") and os.path.isdir(final)
    assert (tmp_path / "latest-demo").resolve() == pathlib.Path(final).resolve()
    final2 = run(lab, "commit", second, "demo").stdout.strip()
    assert (tmp_path / "latest-demo").resolve() == pathlib.Path(final2).resolve()
    assert os.readlink(tmp_path / "latest-demo") == os.path.basename(final2), "relative"


def test_named_result_has_no_latest_link(lab, tmp_path):
    d = run(lab, "begin", tmp_path, "demo", "cell-1").stdout.strip()
    assert d == str(tmp_path / "cell-1.incomplete")
    assert run(lab, "commit", d).returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cell-1"]


def test_commit_refuses_a_folder_that_is_not_incomplete(lab, tmp_path):
    out = run(lab, "commit", tmp_path, "demo")
    assert out.returncode == 2 and "not a NAME.incomplete" in out.stderr


def test_meta_writes_settings_and_the_command(lab, tmp_path):
    out = run(lab, "meta", tmp_path, "demo", "path=/a b/'c\"", "n:=3", "list:=[1,2]",
              "wl.cwd=/x y", "wl.jobs=2", "last=z", "--", "sweep.sh", "cmd", "--", "a b")
    assert out.returncode == 0, out.stderr
    meta = json.loads((tmp_path / "meta.json").read_text())
    assert meta["experiment"] == "demo"
    assert meta["settings"] == {"path": "/a b/'c\"", "n": 3, "list": [1, 2],
                                "wl": {"cwd": "/x y", "jobs": "2"}, "last": "z"}
    assert meta["command"] == ["sweep.sh", "cmd", "--", "a b"]
    assert meta["kernel"]["release"] == os.uname().release
    assert meta["kernel"]["version"] == os.uname().version
    assert meta["machine"]["cpus"] == os.cpu_count()
    assert isinstance(meta["machine"]["pmu"], bool)
    head = subprocess.run(["git", "-C", root_of(lab), "rev-parse", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    assert meta["lab_commit"] == (head or None)      # null outside a git checkout
    assert meta["date"].endswith("Z")


def root_of(lab):
    return pathlib.Path(lab).resolve().parents[2]


@pytest.mark.parametrize("packed", [False, True])
def test_meta_finds_the_commit_in_a_linked_worktree(lab, tmp_path, packed):
    """In a 'git worktree add' checkout .git is a file naming the worktree's
    git folder (HEAD), whose commondir names the repository's (branches,
    loose or packed)."""
    commit = "0123456789abcdef0123456789abcdef01234567"
    common = tmp_path / "repo.git"
    gitdir = common / "worktrees" / "wt"
    gitdir.mkdir(parents=True)
    (gitdir / "HEAD").write_text("ref: refs/heads/helper\n")
    (gitdir / "commondir").write_text("../..\n")
    if packed:
        (common / "packed-refs").write_text(f"# pack-refs with: peeled\n"
                                            f"{commit} refs/heads/helper\n")
    else:
        (common / "refs" / "heads").mkdir(parents=True)
        (common / "refs" / "heads" / "helper").write_text(commit + "\n")
    tree = tmp_path / "wt"
    (tree / "userspace" / "lib").mkdir(parents=True)
    (tree / ".git").write_text(f"gitdir: {gitdir}\n")
    shutil.copy(lab, tree / "userspace" / "lib" / "lab")
    out = run(tree / "userspace" / "lib" / "lab", "meta", tmp_path, "demo")
    assert out.returncode == 0, out.stderr
    assert json.loads((tmp_path / "meta.json").read_text())["lab_commit"] == commit


def test_meta_refuses_a_malformed_setting(lab, tmp_path):
    out = run(lab, "meta", tmp_path, "demo", "novalue")
    assert out.returncode == 2 and "KEY=TEXT" in out.stderr
    assert not (tmp_path / "meta.json").exists()


def test_help_and_unknown_command(lab):
    out = run(lab, "--help")
    assert out.returncode == 0 and "Example" in out.stdout
    assert run(lab, "frobnicate").returncode == 2


def test_variant_is_what_meta_json_records(lab, tmp_path):
    """lab variant, the shell scripts' way to the kernel variant, and
    meta.json's kernel.variant are one rule: on a lab kernel both name it,
    on any other kernel meta.json says null and lab variant fails in one
    line with status 1."""
    assert run(lab, "meta", tmp_path, "x").returncode == 0
    recorded = json.loads((tmp_path / "meta.json").read_text())["kernel"]["variant"]
    out = run(lab, "variant")
    if recorded is None:
        assert out.returncode == 1 and out.stdout == "", out
        assert out.stderr == f"lab: kernel {os.uname().release} is no lab kernel variant\n"
    else:
        assert out.returncode == 0 and out.stdout == recorded + "\n", out
    assert run(lab, "variant", "extra").returncode == 2


# --- CPU lists: the one -C syntax (lab_parse_cpus) ---------------------------

@pytest.mark.parametrize("text, cpus", [
    ("0", [0]), ("0-3,6", [0, 1, 2, 3, 6]), ("6,0-1", [6, 0, 1]), ("0:6:2", [0, 2, 4, 6]),
    ("2-2", [2]), ("1023", [1023]),
])
def test_cpus_reads_ranges_and_lab_lists(lab, text, cpus):
    out = run(lab, "cpus", text)
    assert out.returncode == 0, out.stderr
    assert [int(x) for x in out.stdout.split()] == cpus


@pytest.mark.parametrize("text, why", [
    ("", "no CPU given"), ("x", "'x' is not a CPU number"), ("1,", "a CPU number is missing"),
    ("3-1", "the range 3-1 runs backwards"), ("1,0-2", "CPU 1 is listed twice"),
    ("1024", "CPU 1024 is beyond the largest, 1023"), ("0:4:0", "a step of 0"),
    ("0:4", "a list range wants START:STOP:STEP"), ("1;2", "';' where a ',' or the end"),
    ("-1", "'-1' is not a CPU number"),
])
def test_cpus_refuses_bad_lists_saying_why(lab, text, why):
    out = run(lab, "cpus", text)
    assert out.returncode == 2 and out.stdout == ""
    assert len(out.stderr.splitlines()) == 1, out.stderr
    assert out.stderr.startswith(f"lab: cpus wants a CPU list like '0-3,6', not '{text}' ("), \
        out.stderr
    assert why in out.stderr, out.stderr
