"""plot_calibration.py draws a PNG from a calibration file and refuses
anything else."""
import json
import subprocess
import sys


def test_plot_draws_png(root, tmp_path):
    data = {"kernel": "test", "batches": 3, "calls_per_batch": 10,
            "fits": {"close": {"intercept_ns": 590, "ns_per_loop": 1.5, "r2": 0.999,
                               "points": 2}},
            "points": [{"syscall": "close", "loops": n, "median_ns": 590 + 1.5 * n,
                        "min_ns": 585 + 1.5 * n, "p90_ns": 600 + 1.5 * n}
                       for n in (0, 100)]}
    (tmp_path / "c.json").write_text(json.dumps(data))
    out = subprocess.run([sys.executable, root / "userspace/analysis/plot_calibration.py",
                          tmp_path / "c.json", tmp_path / "c.png"], capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"


def test_plot_rejects_other_json(root, tmp_path):
    (tmp_path / "x.json").write_text("{}")
    out = subprocess.run([sys.executable, root / "userspace/analysis/plot_calibration.py",
                          tmp_path / "x.json", tmp_path / "x.png"], capture_output=True,
                         text=True)
    assert out.returncode == 1
    assert "not a calibration file" in out.stderr
    assert not (tmp_path / "x.png").exists()
