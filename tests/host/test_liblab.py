"""liblab's statistics and fit code, through its TAP unit tests."""
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
