"""lablib.sweep.analyse on made-up sweep folders: a grep sweep that follows
the model exactly is explained by it, an Apache sweep far below the model
is put down to the client and overlap, and bad folders fail with one line."""
import csv
import importlib
import json
import os
import subprocess

import pytest

from resultdirs import ANALYSERS, META, calibrate_dir, write_meta
from lablib.experiments import workloads
from lablib.sweep import analyse_output, progress

SCRIPT = ANALYSERS["workload"]
HEADER = "workload,measure,loops,repeat,units,seconds,syscalls,errors,detail"
# Fits of 3.9 and 4.1 ns per loop: 4.0 ns per loop on average.
CALIBRATION = {"close": (600, 3.9), "getppid": (650, 4.1)}


def make_dir(d, rows, settings, calibration=CALIBRATION, cpus=2):
    d.mkdir(exist_ok=True)
    (d / "raw.csv").write_text(HEADER + "\n" + "".join(r + "\n" for r in rows))
    calibrate_dir(d / "calibration", calibration)
    machine = {"cpu_model": "test", "cpus": cpus, "virtual": True, "accelerator": "tcg",
               "qemu": None, "pmu": False}
    write_meta(d, settings.get("workload", "grep"), settings, machine=machine)
    return d


def report(root, tmp_path, *args):
    env = dict(os.environ, MPLCONFIGDIR=str(tmp_path / "mpl"))
    return subprocess.run([root / ".venv/bin/python", "-m", SCRIPT, *args],
                          capture_output=True, text=True, env=env)


def report_text(root, tmp_path, d, *args):
    """report.txt of sweep folder @d analysed with @args, its lines joined."""
    out = report(root, tmp_path, d, *args)
    assert out.returncode == 0, out.stderr
    return " ".join((d / "report.txt").read_text().split())


def grep_rows():
    # 2.0 s + 1e6 calls x 4 ns per loop x loops, +-0.01 s around it.
    rows = []
    for loops in (0, 100, 200):
        t = 2.0 + 1e6 * 4.0 * loops * 1e-9
        for repeat, noise in ((1, -0.01), (2, 0.01)):
            rows.append(f'grep,grep,{loops},{repeat},1,{t + noise:.6f},{1_000_000 + repeat},0,'
                        f'"exit 0, 312 matches"')
    return rows


def test_grep_follows_the_model(root, tmp_path):
    d = make_dir(tmp_path / "grep", grep_rows(),
                 {"workload": "grep", "loops": [0, 100, 200], "repeats": 2})
    out = report(root, tmp_path, d)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith((d / "report.txt").read_text())

    s = json.loads((d / "summary.json").read_text())
    assert s["workload"] == s["experiment"] == "grep"
    assert s["ns_per_loop"] == pytest.approx(4.0)
    assert s["settings"]["loops"] == [0, 100, 200]
    m = s["measures"]["grep"]
    assert m["unit"] == "greps/min"
    mod = m["model"]
    assert mod["base_seconds_per_unit"] == pytest.approx(2.0)
    assert mod["syscalls_per_unit"] == pytest.approx(1_000_001.5)
    assert mod["max_loops"] == 200 and mod["max_added_ns"] == pytest.approx(800)
    assert mod["predicted_slowdown"] == pytest.approx(2.8 / 2.0, rel=1e-3)
    assert mod["measured_slowdown"] == pytest.approx(mod["predicted_slowdown"], rel=0.01)
    assert 0.95 <= mod["explained"] <= 1.05
    # The verdict gives the sweep's own figures, not a fixed band.
    assert mod["explanation"].startswith(
        "The model explains the curve: measured slowdown 1.400 against 1.400 predicted at "
        "200 loops"), mod["explanation"]
    assert "within 25%" not in mod["explanation"]

    rows = list(csv.DictReader(open(d / "summary.csv")))
    assert [r["loops"] for r in rows] == ["0", "100", "200"]
    assert all(r["measure"] == "grep" and r["n"] == "2" for r in rows)
    thr = [float(r["mean"]) for r in rows]
    assert thr[-1] < thr[1] < thr[0]
    assert thr[0] == pytest.approx((60 / 1.99 + 60 / 2.01) / 2)
    assert float(rows[0]["stddev"]) > 0 and rows[0]["unit"] == "greps/min"
    assert float(rows[0]["min"]) == pytest.approx(60 / 2.01)
    assert float(rows[1]["added_ns"]) == pytest.approx(400)
    assert float(rows[2]["predicted_throughput"]) == pytest.approx(60 / 2.8, rel=1e-3)
    assert m["points"][2]["mean"] == pytest.approx(thr[2])
    assert m["points"][2]["unit"] == "greps/min"
    assert not any(k.startswith("throughput") for k in m["points"][0])

    png = (d / "grep.png").read_bytes()
    assert png[:4] == b"\x89PNG" and len(png) > 10_000
    text = (d / "report.txt").read_text()
    assert "measured slowdown 1.400, predicted 1.400 at 200 loops (+800 ns)" in text
    assert "2 CPUs" in text.splitlines()[0] and "4.000 ns added per loop" in text
    # 2 s over 1,000,001.5 calls: each call's delay doubles a grep at 2,000 ns.
    assert mod["half_ns"] == pytest.approx(2000, rel=1e-5)
    assert mod["half_loops"] == pytest.approx(2000 / 4.0, rel=1e-4)
    assert mod["reached_halves"] == pytest.approx(0.4, rel=1e-4)
    assert mod["measured_half_ns"] is None
    assert "d\u00bd = base / N = 2,000 ns (about 500 loops)" in mod["shape"]
    assert "0.40 d\u00bd: short of the knee" in mod["shape"]
    assert "Shape: a grep took 2 s at loops 0 and made 1,000,002" in " ".join(text.split())


def test_a_sweep_past_the_knee_finds_where_throughput_halved(root, tmp_path):
    """The shape of 1 / (base + N x d): a sweep to 2.5 d\u00bd finds the
    measured halving at d\u00bd = base / N."""
    rows = []
    for loops in (0, 250, 600, 1000, 1250):
        t = 2.0 + 1e6 * 4.0 * loops * 1e-9
        rows += [f"grep,grep,{loops},{r},1,{t:.6f},1000000,0," for r in (1, 2)]
    d = make_dir(tmp_path / "grep", rows, {"workload": "grep", "repeats": 2})
    out = report(root, tmp_path, d, "--json")
    assert out.returncode == 0, out.stderr
    mod = json.loads((d / "summary.json").read_text())["measures"]["grep"]["model"]
    assert mod["half_ns"] == pytest.approx(2000)
    assert mod["reached_halves"] == pytest.approx(5000 / 2000)
    # Halved between 1,000 ns (250 loops) and 2,400 ns (600): the time a
    # grep is straight between them, the throughput is not, and a straight
    # line across the hyperbola put the halving at 2,100 ns.
    assert mod["measured_half_ns"] == pytest.approx(2000)
    assert "2.50 d\u00bd, and the measured throughput halved at 2,000 ns" in mod["shape"]


def apache_rows():
    # Reply time 2 ms at loops 0 and 2.2 ms at 1000 loops; the server made
    # 2000 system calls per reply, so the model predicts 2 + 8 = 10 ms.
    # The sustained rate falls from 500/s to 450/s where the model says 100/s;
    # Apache's CPU for the knee step's requests: 1.6, 1.8 and 2.0 ms each.
    rows = []
    for loops, reply_s, rate, cpu_s in ((0, 0.0020, 500, 0.0016), (500, 0.0021, 480, 0.0018),
                                        (1000, 0.0022, 450, 0.0020)):
        for repeat in (1, 2):
            rows.append(f"apache,reply,{loops},{repeat},10,{10 * reply_s:.6f},20000,0,")
            rows.append(f"apache,saturation,{loops},{repeat},{rate * 4},4.0,{rate * 4 * 2000},"
                        f"{repeat - 1},\"rate {rate}/s\"")
            rows.append(f"apache,server,{loops},{repeat},{rate * 4},{rate * 4 * cpu_s:.6f},"
                        f"{rate * 4 * 2000},{repeat - 1},\"Apache's CPU\"")
    return rows


def test_apache_far_below_the_model(root, tmp_path):
    d = make_dir(tmp_path / "apache", apache_rows(),
                 {"workload": "apache"})
    out = report(root, tmp_path, d)
    assert out.returncode == 0, out.stderr
    s = json.loads((d / "summary.json").read_text())
    assert list(s["measures"]) == ["reply", "saturation", "server"]
    reply = s["measures"]["reply"]
    assert reply["unit"] == "1/s (1/reply time)"
    assert reply["points"][0]["mean"] == pytest.approx(500)
    mod = reply["model"]
    assert mod["predicted_slowdown"] == pytest.approx(5.0)
    assert mod["measured_slowdown"] == pytest.approx(1.1)
    assert mod["explained"] == pytest.approx(0.1 / 4)
    assert "smaller than" in mod["explanation"] and "client time" in mod["explanation"]
    assert "client" in mod["explanation"]

    sat = s["measures"]["saturation"]
    assert [p["errors"] for p in sat["points"]] == [1, 1, 1]
    assert sat["points"][-1]["mean"] == pytest.approx(450)
    assert sat["model"]["predicted_slowdown"] == pytest.approx(5.0)
    assert sat["model"]["explained"] < 0.1
    assert "overlap" in sat["model"]["explanation"]
    assert "client" in sat["model"]["explanation"]
    assert "on 2 CPUs" in sat["model"]["explanation"]

    server = s["measures"]["server"]
    assert [p["mean"] for p in server["points"]] == pytest.approx([625, 1 / 0.0018, 500])
    assert server["unit"] == "requests/s (the server's CPU)"

    rows = list(csv.DictReader(open(d / "summary.csv")))
    assert [(r["measure"], r["loops"]) for r in rows] == [
        ("reply", "0"), ("reply", "500"), ("reply", "1000"),
        ("saturation", "0"), ("saturation", "500"), ("saturation", "1000"),
        ("server", "0"), ("server", "500"), ("server", "1000")]
    assert (d / "apache.png").read_bytes()[:4] == b"\x89PNG"
    text = (d / "report.txt").read_text()
    assert "reply: throughput in 1/s" in text and "saturation: throughput in requests/s" in text


def load(root):
    return importlib.import_module(SCRIPT)


def build_runs(times, calls):
    return [{"workload": "kbuild", "measure": "build", "loops": loops, "ns": None,
             "knob": "loops", "setting": loops, "repeat": 1, "units": 1, "seconds": t,
             "syscalls": c, "errors": 0}
            for loops, t, c in zip((0, 250), times, calls)]


def test_explanation_above_the_model_and_without_counts(root):
    mod = load(root)
    # 100 s + 1e7 calls x 1000 ns = 110 s predicted; 150 s measured, same calls.
    rows = mod.points(build_runs((100.0, 150.0), (1e7, 1.02e7)), "build", 4.0)
    m = mod.model(rows, "build", 2)
    assert m["explained"] == pytest.approx(5.0, rel=0.01)
    assert "larger than" in m["explanation"] and "stayed within 10%" in m["explanation"]
    # The count grew by half: said so.
    rows = mod.points(build_runs((100.0, 150.0), (1e7, 1.5e7)), "build", 4.0)
    assert "+50%" in mod.model(rows, "build", 2)["explanation"]
    # No count: no model.
    rows = mod.points(build_runs((100.0, 150.0), (None, None)), "build", 4.0)
    m = mod.model(rows, "build", 2)
    assert m["predicted_slowdown"] is None and rows[1]["predicted_throughput"] is None
    assert m["measured_slowdown"] == pytest.approx(1.5)
    assert "cannot be drawn" in m["explanation"]


def test_check_adds_what_the_module_does_not_time(root):
    from lablib.experiments import workloads
    mod = load(root)
    # The module's clock_ns (41) is in its own figure; the rest of the
    # calibration's 107 ns entry is not.  Absent or unreadable: nothing.
    meta = {"modules": {"delay": {"stats": {"clock_ns": "41"}}}}
    assert workloads.untimed_ns(107.0, meta) == pytest.approx(66.0)
    assert workloads.untimed_ns(30.0, meta) == 0.0
    assert workloads.untimed_ns(107.0, {"modules": {}}) == 0.0
    assert workloads.untimed_ns(107.0, {"modules": {"delay": {"stats": {"clock_ns": "x"}}}}) == 0.0
    # 100 s + 1e7 calls x (1000 ns measured + 66 untimed) = 110.66 s, as measured.
    rows = mod.points(build_runs((100.0, 110.66), (1e7, 1e7)), "build", 4.0,
                      measured={(250, None): 1000.0}, entry_ns=107.0)
    m = mod.model(rows, "build", 2, 4.0, 107.0, untimed_ns=66.0)
    assert rows[1]["checked_seconds_per_unit"] == pytest.approx(110.66)
    assert m["check"] == {"points": 1, "max_abs_error": pytest.approx(0, abs=1e-12),
                          "untimed_ns": 66.0}
    # Without it the same point is 0.6 % over the check.
    rows = mod.points(build_runs((100.0, 110.66), (1e7, 1e7)), "build", 4.0,
                      measured={(250, None): 1000.0}, entry_ns=107.0)
    assert mod.model(rows, "build", 2, 4.0, 107.0)["check"]["max_abs_error"] == \
        pytest.approx(110.66 / 110.0 - 1)


def test_missing_raw_csv(root, tmp_path):
    d = make_dir(tmp_path / "d", grep_rows(), {"workload": "grep"})
    (d / "raw.csv").unlink()
    out = report(root, tmp_path, d)
    assert out.returncode == 1
    assert len(out.stderr.splitlines()) == 1 and "raw.csv" in out.stderr
    assert not (d / "summary.json").exists()


@pytest.mark.parametrize("break_it, message", [
    (lambda d: (d / "raw.csv").write_text(""), "empty"),
    (lambda d: (d / "raw.csv").write_text(HEADER + "\n"), "no runs"),
    (lambda d: (d / "raw.csv").write_text(HEADER + "\ngrep,scan,0,1,1,2.0,5,0,\n"),
     "unknown measure 'scan'"),
    (lambda d: (d / "raw.csv").write_text(HEADER + "\ngrep,grep,100,1,1,2.0,5,0,\n"),
     "no run at loops 0"),
    (lambda d: (d / "calibration" / "meta.json").unlink(), "calibration"),
    (lambda d: calibrate_dir(d / "calibration", CALIBRATION, loops=(0,)), "no fits"),
    (lambda d: (d / "calibration" / "raw.csv").write_text("x\n"), "no column"),
    (lambda d: (d / "meta.json").unlink(), "not a lab result folder"),
])
def test_bad_inputs(root, tmp_path, break_it, message):
    d = make_dir(tmp_path / "d", grep_rows(), {"workload": "grep"})
    break_it(d)
    out = report(root, tmp_path, d)
    assert out.returncode == 1, out.stdout
    assert len(out.stderr.splitlines()) == 1 and message in out.stderr


def test_wrong_argument_count(root, tmp_path):
    out = report(root, tmp_path)
    assert out.returncode == 2
    assert out.stderr.startswith("usage: python -m lablib.sweep.analyse") and \
        "RESULT_DIR" in out.stderr
    out = report(root, tmp_path, "--help")
    assert out.returncode == 0 and "Example:" in out.stdout


def test_a_delay_below_the_noise_is_called_noise(root, tmp_path):
    # 4700 calls x 2 us is 0.1% of 8 s, and the runs spread by 5%.
    rows = []
    for loops in (0, 500):
        for repeat, t in enumerate((7.6, 8.0, 8.4, 8.2, 7.8), 1):
            rows.append(f"grep,grep,{loops},{repeat},1,{t - 0.5 * (loops > 0)},4700,0,")
    d = make_dir(tmp_path / "noisy", rows, {"workload": "grep"})
    out = report(root, tmp_path, d)
    assert out.returncode == 0, out.stderr
    m = json.loads((d / "summary.json").read_text())["measures"]["grep"]["model"]
    assert m["predicted_slowdown"] == pytest.approx(1 + 4700 * 2000e-9 / 8.0, rel=1e-3)
    assert m["measured_slowdown"] < 1
    assert "cannot be seen" in m["explanation"] and "noise" in m["explanation"]


def test_json_without_plot(root, tmp_path):
    d = make_dir(tmp_path / "grep", grep_rows(), {"workload": "grep"})
    out = report(root, tmp_path, "--json", "--no-plot", d)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == json.loads((d / "summary.json").read_text())
    assert not (d / "grep.png").exists() and (d / "report.txt").exists()


def test_apache_knee_from_the_saturation_steps(root, tmp_path):
    d = make_dir(tmp_path / "apache", apache_rows(), {"workload": "apache"})
    steps = ["loops,repeat,phase,offered,reply_rate,errors,client_cpu_pct,sustained"]
    # loops 0: ramp 100 -> 169 kept, 220 not; refined: 194 kept, 207 not (6.7 %),
    # then 200 kept: the knee lies between 200 and 207/s.  Repeat 2 alike.
    for repeat in (1, 2):
        for phase, offered, ok in (("ramp", 100, 1), ("ramp", 130, 1), ("ramp", 169, 1),
                                   ("ramp", 220, 0), ("refine", 194, 1), ("refine", 207, 0),
                                   ("refine", 200, 1)):
            steps.append(f"0,{repeat},{phase},{offered},{offered if ok else 150},0,10,{ok}")
    # loops 1000: never overloaded within the ramp.
    steps += [f"1000,1,ramp,{r},{r},0,10,1" for r in (100, 130)]
    steps += [f"1000,2,ramp,{r},{r},0,10,1" for r in (100, 130)]
    (d / "saturation.csv").write_text("\n".join(steps) + "\n")
    out = report(root, tmp_path, d)
    assert out.returncode == 0, out.stderr
    pts = {p["loops"]: p for p in
           json.loads((d / "summary.json").read_text())["measures"]["saturation"]["points"]}
    assert pts[0]["knee_kept_up"] == 200 and pts[0]["knee_overloaded"] == 207
    assert pts[1000]["knee_kept_up"] == 130 and pts[1000]["knee_overloaded"] is None
    assert pts[500]["knee_kept_up"] is None
    text = (d / "report.txt").read_text()
    assert "knee at 0 loops: kept up with 200/s offered, overloaded at 207/s (+3.5 %)" in text
    assert "knee at 1000 loops: kept up with 130/s offered, no overload found" in text


NS_HEADER = "workload,measure,loops,ns,repeat,units,seconds,syscalls,errors,detail"


def ns_cmd_sweep(d, settings, times, runs, points):
    """A cmd sweep in ns on the host's clock in @d: at each (ns, seconds)
    of @times, @runs runs of 20000 calls, the r-th taking r ms more;
    points.csv's rows after its header, @points."""
    write_meta(d, "cmd", {"workload": "cmd", "knob": "ns", **settings})
    (d / "raw.csv").write_text("\n".join([NS_HEADER, *(
        f"cmd,cmd,,{ns},{r},1,{t + 0.001 * r},20000,0," for ns, t in times
        for r in range(1, runs + 1))]) + "\n")
    (d / "points.csv").write_text("loops,ns,delayed,spun_ns,measured_ns\n" + points)
    return d


def test_a_command_sweep_names_its_command(root, tmp_path):
    """report.txt and the plot say what cmd timed, not only 'cmd' (the
    command was only in meta.json)."""
    d = tmp_path / "c"
    write_meta(d, "cmd", {"workload": "cmd", "knob": "ns"},
               command=["workloads/sweep.sh", "cmd", "--ns", "0,1000", "--", "tar", "cf",
                        "/dev/null", "/usr/include"])
    (d / "raw.csv").write_text("\n".join([NS_HEADER] + [
        f"cmd,cmd,,{ns},{r},1,{1 + ns / 1e5 + r / 1e3},100,0," for ns in (0, 1000)
        for r in (1, 2)]) + "\n")
    (d / "points.csv").write_text("loops,ns,delayed,spun_ns,measured_ns\n,0,0,0,\n"
                                  ",1000,200,200000,1000.0\n")
    out = report(root, tmp_path, d, "--no-plot")
    assert out.returncode == 0, out.stderr
    first = (d / "report.txt").read_text().splitlines()[0]
    assert first.startswith("cmd (tar cf /dev/null /usr/include) sweep, "), first
    meta = {"command": ["sweep.sh", "cmd", "--", "python3", "-c", "x" * 200]}
    assert analyse_output.label("cmd", meta).endswith(" ...)")
    assert analyse_output.label("grep", {"command": ["sweep.sh", "grep"]}) == "grep"


def test_a_program_that_varies_on_the_virtual_clock_is_said_to(root, tmp_path):
    """Exact points whose runs differ: report.txt says by how much, and for
    a Python command how to fix its hash seed."""
    d = tmp_path / "py"
    write_meta(d, "cmd", {"workload": "cmd", "knob": "ns"},
               command=["sweep.sh", "cmd", "--ns", "0,1000", "--", "python3", "-c", "pass"],
               machine=dict(META["machine"], clock={"kind": "virtual", "shift": 0}))
    (d / "raw.csv").write_text("\n".join(
        ["workload,measure,loops,ns,repeat,units,seconds,syscalls,errors,p9_requests,detail"]
        + [f"cmd,cmd,,{ns},{r},1,{(1 + ns / 1e5) * (1 + 0.0025 * (r - 1))},100,0,0,"
           for ns in (0, 1000) for r in (1, 2)]) + "\n")
    (d / "points.csv").write_text("loops,ns,delayed,spun_ns,measured_ns\n,0,0,0,\n"
                                  ",1000,200,200000,1000.0\n")
    text = report_text(root, tmp_path, d, "--no-plot")
    assert "exact: every point" in text
    assert "runs of an exact point differ by up to 0.25" in text
    assert "'env PYTHONHASHSEED=0 python3 -c pass'" in text


def test_ns_mode_needs_no_calibration_and_reports_the_measured_delay(root, tmp_path):
    d = ns_cmd_sweep(tmp_path / "ns", {}, ((0, 1.0), (1000, 1.02), (10000, 1.2)), 2,
                     ",0,0,0,\n,1000,40000,41200000,1030.0\n,10000,40000,404000000,10100.0\n")
    out = report(root, tmp_path, d)
    assert out.returncode == 0, out.stderr
    s = json.loads((d / "summary.json").read_text())
    assert s["ns_per_loop"] is None
    pts = s["measures"]["cmd"]["points"]
    assert [p["ns"] for p in pts] == [0, 1000, 10000] and [p["loops"] for p in pts] == [None] * 3
    assert [p["added_ns"] for p in pts] == [0, 1000, 10000]
    assert pts[1]["measured_ns"] == 1030.0 and pts[1]["measured_vs_added"] == pytest.approx(0.03)
    assert pts[0]["measured_ns"] is None
    mod = s["measures"]["cmd"]["model"]
    # 1 s + 20000 calls x 10 us = 1.2 s: the model holds.
    assert mod["predicted_slowdown"] == pytest.approx(1.2, rel=0.01)
    # The check with the module's own ns: 1.0015 s + 20000 x 10.1 us = 1.2035 s
    # against 1.2015 measured; 1.0015 + 20000 x 1.03 us = 1.0221 against 1.0215.
    assert pts[0]["check_error"] is None
    assert pts[2]["checked_seconds_per_unit"] == pytest.approx(1.2035)
    assert pts[2]["check_error"] == pytest.approx(1.2015 / 1.2035 - 1)
    assert pts[1]["check_error"] == pytest.approx(1.0215 / 1.0221 - 1)
    assert mod["check"] == {"points": 2, "max_abs_error": pytest.approx(0.002 / 1.2035),
                            "untimed_ns": 0.0, "covered": 2, "with_interval": 2}
    text = (d / "report.txt").read_text()
    assert "within 0.17 % at all 2 delayed points" in text
    assert "requested in ns" in text and "at 10000 ns" in text
    assert "the module measured 10100 ns per delayed call at 10000 ns, +1.0 %" in text
    assert (d / "cmd.png").exists()


def test_a_sweep_through_the_bpf_delay_says_so(root, tmp_path):
    """What delayed the calls is the BPF delay's in report.txt, not the
    module's, where meta.json's settings say delay=bpf."""
    d = ns_cmd_sweep(tmp_path / "bpf", {"delay": "bpf"}, ((0, 1.0), (1000, 1.02)), 2,
                     ",0,0,0,\n,1000,40000,41200000,1030.0\n")
    text = report_text(root, tmp_path, d, "--no-plot")
    assert "delays requested in ns (the BPF delay, no calibration)" in text
    assert "the BPF delay measured 1030 ns per delayed call" in text
    assert "the ns the BPF delay measured per call" in text and "module" not in text


# Loops and ns runs in one sweep ("mixed"); a run with both knobs ("exactly one").
@pytest.mark.parametrize("name, rows, message", [
    ("mixed", "cmd,cmd,0,,1,1,1.0,5,0,\ncmd,cmd,,100,1,1,1.0,5,0,\n", "mixed"),
    ("both", "cmd,cmd,0,100,1,1,1.0,5,0,\n", "exactly one"),
])
def test_runs_with_loops_and_ns_are_refused(root, tmp_path, name, rows, message):
    d = tmp_path / name
    write_meta(d, "cmd", {"workload": "cmd"})
    (d / "raw.csv").write_text(f"{NS_HEADER}\n{rows}")
    out = report(root, tmp_path, d)
    assert out.returncode == 1 and message in out.stderr


P9_HEADER = "workload,measure,loops,ns,repeat,units,seconds,syscalls,errors,p9_requests,detail"


@pytest.mark.parametrize("clock, requests, says, exact", [
    ("virtual", (0, 0, 0), "exact: every point", [True, True, True]),
    ("virtual", (0, 3, 0), "not exact (drawn hollow): loops 100 (6 requests to the host's "
     "files (9p) in its timed windows)", [True, False, True]),
    ("host", (0, 0, 0), "host's clock: every point measures this machine", [False] * 3),
    ("virtual", ("", "", ""), "no point is exact", [False] * 3),
])
def test_a_point_is_exact_only_without_requests_to_the_host(root, tmp_path, clock, requests,
                                                            says, exact):
    """On the virtual clock a point whose timed windows asked the host's
    files for anything (9p) is not exact, and the report names it; on the
    host's clock no point is; without counts no point is either."""
    rows = []
    for loops, p9 in zip((0, 100, 200), requests):
        t = 2.0 + 1e6 * 4.0 * loops * 1e-9
        for repeat in (1, 2):
            rows.append(f"grep,grep,{loops},,{repeat},1,{t:.6f},1000000,0,{p9},")
    d = tmp_path / "grep"
    make_dir(d, [], {"workload": "grep"})
    (d / "raw.csv").write_text(P9_HEADER + "\n" + "\n".join(rows) + "\n")
    meta = json.loads((d / "meta.json").read_text())
    meta["machine"]["clock"] = {"kind": clock, "shift": 0}
    (d / "meta.json").write_text(json.dumps(meta))
    out = report(root, tmp_path, d)
    assert out.returncode == 0, out.stderr
    assert says in " ".join((d / "report.txt").read_text().split())
    points = json.loads((d / "summary.json").read_text())["measures"]["grep"]["points"]
    assert [p["exact"] for p in points] == exact
    with open(d / "summary.csv") as f:
        assert [r["exact"] for r in csv.DictReader(f)] == [str(e) for e in exact]


def test_progress_line_keeps_four_digits_of_a_tiny_time(root, tmp_path):
    """An Apache reply on the virtual clock is some 56 us: the progress
    line said 'reply 0.0001 s per unit'."""
    raw = tmp_path / "raw.csv"
    raw.write_text("workload,measure,loops,ns,repeat,units,seconds,syscalls,errors,"
                   "p9_requests,detail\n"
                   "apache,reply,0,,1,10,0.000559,332,0,0,x\n"
                   "apache,reply,0,,2,10,0.000572,338,0,0,x\n")
    assert progress.point(raw, "0", "") == "reply 56.55 us per unit +- 0.92 (n=2)"


def test_progress_line_of_an_ns_point_and_of_a_point_without_work(root, tmp_path):
    """lablib.sweep.progress reads raw.csv as the analysis does: a point in
    ns is named by its ns, not by an empty loop count, and a point whose
    runs did no unit of work says so instead of dividing by 0."""
    raw = tmp_path / "raw.csv"
    raw.write_text("workload,measure,loops,ns,repeat,units,seconds,syscalls,errors,"
                   "p9_requests,detail\n"
                   "grep,grep,,0,1,1,2.0,10,0,0,x\n"
                   "grep,grep,,5000,1,1,3.0,10,0,0,x\n"
                   "grep,grep,,5000,2,1,5.0,10,0,0,x\n"
                   "grep,grep,,9000,1,0,5.0,10,0,0,x\n")

    def say(*point):
        try:
            return 0, progress.point(raw, *point), ""
        except ValueError as e:
            return 1, "", str(e)

    assert say("", "5000") == (0, "grep 4 s per unit +- 1.4 (n=2)", "")
    assert say("", "9000") == (0, "grep: no unit of work done", "")
    assert say("", "7000") == (0, "no runs", "")
    raw.write_text(raw.read_text() + "grep,grep,,x,1,1,2.0,10,0,0,x\n")
    code, out, err = say("", "5000")
    assert code == 1 and out == "" and "line 6: ns is 'x', not an integer" in err


# --- the reference client's reply logs, reduced on the host -------------------

RAW = ",".join(workloads.RAW_COLUMNS)
REPLY_HEADER = "request,status,seconds,calls,error\n"
# What the guest ran before the host reduced the replies (server.sh's
# reply_clean), on reqtime's old lines "200 SECONDS CALLS".
OLD_REPLY_CLEAN = r"""awk '$1 == 200 && NF == 3 { print $3, $2 }' "$1" | sort -g -k1,1 -k2,2 | awk '
    NR == 1 { calls = $1 }
    $1 == calls { v[++n] = $2 }
    END {
        if (!n) { print "0 0 0"; exit }
        k = int(n / 10)
        for (i = k + 1; i <= n - k; i++) sum += v[i]
        printf "%.9g %s %d\n", sum / (n - 2 * k), calls, n
    }'"""


def reply_csv(replies, errors=()):
    """reqtime's CSV of @replies [(seconds, calls)], then a failed request
    for each reason in @errors."""
    rows = [f"{i},200,{s:.9f},{'' if c is None else c}," for i, (s, c) in enumerate(replies, 1)]
    rows += [f"{len(replies) + i},,,,{e}" for i, e in enumerate(errors, 1)]
    return REPLY_HEADER + "".join(r + "\n" for r in rows)


def old_reply_clean(tmp_path, replies):
    log = tmp_path / "old.txt"
    log.write_text("".join(f"200 {s:.9f} {c}\n" for s, c in replies) + "error connect\n")
    r = subprocess.run(["bash", "-c", OLD_REPLY_CLEAN, "reply_clean", log],
                       capture_output=True, text=True, check=True)
    return r.stdout.split()


def test_read_replies_reads_reqtimes_csv(tmp_path):
    log = tmp_path / "reply-l0-1.csv"
    log.write_text(REPLY_HEADER + "1,200,0.000100000,7,\n2,,,,connect: Connection refused\n"
                   "3,200,0.000120000,12,\n4,404,0.000090000,7,\n"
                   '5,,,,"reply: a reason, with a comma and a ""quote"""\n')
    assert workloads.read_replies(log) == ([(0.0001, 7), (0.00012, 12)], 3)
    # Without the count the calls are None; a log of failures has no replies.
    log.write_text(reply_csv([(0.0001, None), (0.0002, None)]))
    assert workloads.read_replies(log) == ([(0.0001, None), (0.0002, None)], 0)
    log.write_text(reply_csv([], ["connection lost"] * 3))
    assert workloads.read_replies(log) == ([], 3)
    log.write_text(REPLY_HEADER)
    assert workloads.read_replies(log) == ([], 0)


@pytest.mark.parametrize("text, message", [
    ("", "reply-l0-1.csv: empty file, no header (not a reply log of workloads/reqtime)"),
    ("200 0.0001 7\n", "reply-l0-1.csv: no column"),
    (REPLY_HEADER + "1,200,0.0001,7,\n2,200,x,7,\n",
     "reply-l0-1.csv line 3: seconds is 'x', not a number"),
    (REPLY_HEADER + "1,200,0.0001,7\n", "reply-l0-1.csv line 2: not 5 fields"),
    (REPLY_HEADER + "1,200,0.0001,7,\n3,200,0.0001,7,\n",
     "reply-l0-1.csv line 3: request is '3', not 2"),
    (REPLY_HEADER + "1,200,0.0001,-7,\n", "line 2: calls is '-7', not a finite number >= 0"),
    (REPLY_HEADER + "1,,0.0001,,connect\n", "line 2: an error ('connect') with a status"),
    (REPLY_HEADER + "1,,,,\n", "line 2: status is '', not an integer"),
    (REPLY_HEADER + "1,200,0.0001,7,\n2,200,0.0001,,\n",
     "line 3: calls counted in some replies, not in others"),
])
def test_read_replies_refuses_what_reqtime_did_not_write(tmp_path, text, message):
    log = tmp_path / "reply-l0-1.csv"
    log.write_text(text)
    with pytest.raises(ValueError) as e:
        workloads.read_replies(log)
    assert message in str(e.value) and str(log) in str(e.value)


@pytest.mark.parametrize("replies, said", [
    # The cases the guest's reply_clean was tested with: three clean
    # replies of 7 calls, two that met other work (12 calls), in any order.
    ([(0.000096, 7), (0.000120, 12), (0.000095, 7), (0.000119, 12), (0.000097, 7)],
     (9.6e-05, 7, 3)),
    # More replies met other work than did not: still the clean ones.
    ([(0.000265, 12), (0.000180, 7), (0.000266, 12), (0.000181, 7), (0.000264, 12)],
     (0.0001805, 7, 2)),
    # Ten clean replies: a tenth off each end (the 3 us longer one and the
    # fastest), the mean of the other eight.
    ([(t * 1e-7, 7) for t in (950, 951, 952, 951, 950, 980, 952, 951, 950, 949)],
     (9.50875e-05, 7, 10)),
    # Without the count, every reply is clean.
    ([(0.0003, None), (0.0001, None)], (0.0002, None, 2)),
])
def test_a_runs_reply_is_its_clean_replies_trimmed_mean(replies, said):
    seconds, calls, clean = workloads.clean_reply(replies)
    assert (calls, clean) == said[1:] and seconds == pytest.approx(said[0], rel=1e-12)


def test_clean_reply_is_what_the_guest_made_of_the_same_replies(tmp_path):
    """On made-up runs, fewer replies than ten (nothing cut), ties of
    times and of calls, the fewest calls made by one reply or by most:
    the figures the guest's awk printed (to its nine digits), exactly."""
    import random
    rng = random.Random(1)
    runs = [[(0.0001, 7)], [(0.0002, 7), (0.0001, 7), (0.0002, 8)],
            [(0.0001, 5)] * 9 + [(0.0003, 5)] * 3, [(0.0001 + i * 1e-9, 3) for i in range(10)]]
    for n in (1, 4, 9, 10, 11, 19, 20, 21, 99, 100, 101, 1000):
        runs.append([(round(rng.uniform(50e-6, 60e-6), 9) if rng.random() < 0.9 else
                      round(rng.uniform(100e-6, 2e-3), 9), rng.choice((30, 30, 30, 31, 44)))
                     for _ in range(n)])
        runs.append([(round(rng.choice((55e-6, 56e-6, 57e-6)), 9), 30) for _ in range(n)])
    for replies in runs:
        seconds, calls, clean = workloads.clean_reply(replies)
        assert [f"{seconds:.9g}", str(calls), str(clean)] == old_reply_clean(tmp_path, replies)
    with pytest.raises(ValueError, match="no replies"):
        workloads.clean_reply([])


def apache_reply_runs():
    """{(loops, repeat): replies} of a made-up Apache sweep: 30 replies a
    run, most of 2000 calls, some that met other work (2003 calls and
    slower), two stray ones a run that the trimmed mean drops."""
    import random
    rng = random.Random(7)
    out = {}
    for loops, base in ((0, 0.0020), (500, 0.0021), (1000, 0.0022)):
        for repeat in (1, 2):
            replies = [(round(base * rng.uniform(0.999, 1.001), 9), 2000) for _ in range(26)]
            replies += [(round(base * 1.2, 9), 2003), (round(base * 1.3, 9), 2003),
                        (round(base * 5, 9), 2000), (round(base * 0.5, 9), 2000)]
            rng.shuffle(replies)
            out[loops, repeat] = replies
    return out


def apache_other_rows():
    return [r for r in apache_rows() if ",reply," not in r]


def as_raw(rows):
    """apache_rows()' rows (no ns, no p9_requests) in raw.csv's columns now."""
    out = []
    for r in rows:
        workload, measure, loops, repeat, rest = r.split(",", 4)
        units, seconds, syscalls, errors, detail = rest.split(",", 4)
        out.append(",".join([workload, measure, loops, "", repeat, units, seconds, syscalls,
                             errors, "0", detail]))
    return out


def apache_sweep(d, new_style):
    """The made-up Apache sweep: its reply rows as the guest writes them
    now (@new_style: sums, every reply in logs/reply-l<loops>-<repeat>.csv)
    or as it wrote them before (the clean trimmed mean, to nine digits,
    the replies in a .txt log the host does not read)."""
    rows = []
    d.mkdir()
    (d / "logs").mkdir()
    for (loops, repeat), replies in apache_reply_runs().items():
        tag = f"l{loops}-{repeat}"
        errors = ["connect: Connection refused"] if repeat == 2 else []
        if new_style:
            (d / f"logs/reply-{tag}.csv").write_text(reply_csv(replies, errors))
            rows.append(f"apache,reply,{loops},,{repeat},{len(replies)},"
                        f"{sum(s for s, _ in replies):.9f},{sum(c for _, c in replies)},"
                        f"{len(errors)},0,\"every reply in logs/reply-{tag}.csv (reqtime)\"")
        else:
            (d / f"logs/reply-{tag}.txt").write_text(
                "".join(f"200 {s:.9f} {c}\n" for s, c in replies) +
                "".join(f"error {e}\n" for e in errors))
            seconds, calls, clean = workloads.clean_reply(replies)
            rows.append(f"apache,reply,{loops},,{repeat},1,{seconds:.9g},{calls},{len(errors)},0,"
                        f"\"the trimmed mean (a tenth off each end) of the {clean} of "
                        f"{len(replies)} replies with the fewest delayed calls\"")
    d = make_dir(d, [], {"workload": "apache"})
    (d / "raw.csv").write_text("\n".join([RAW, *rows, *as_raw(apache_other_rows())]) + "\n")
    return d


def test_new_reply_rows_analyse_as_the_old_reduced_ones(root, tmp_path):
    """A sweep whose guest wrote sums and every reply has the figures of
    the same sweep reduced in the guest: the host's reduction is the
    guest's was."""
    new, old = (apache_sweep(tmp_path / name, name == "new") for name in ("new", "old"))
    for d in (new, old):
        out = report(root, tmp_path, d, "--no-plot")
        assert out.returncode == 0, out.stderr
    s_new, s_old = (json.loads((d / "summary.json").read_text()) for d in (new, old))
    reply_new, reply_old = s_new["measures"]["reply"], s_old["measures"]["reply"]
    # The old rows held nine digits (the guest's %.9g): the figures agree
    # to about that, the spread of two close runs to that of their mean.
    for p_new, p_old in zip(reply_new["points"], reply_old["points"], strict=True):
        for key, value in p_old.items():
            if isinstance(value, float):
                # A mean's interval is its sd times t (12.7 for two runs).
                spread = 2e-7 if key in ("ci_low", "ci_high") else 1e-8
                assert p_new[key] == pytest.approx(value, rel=1e-8, abs=spread * p_old["mean"]), key
            elif isinstance(value, list):
                assert p_new[key] == pytest.approx(value, rel=1e-8), key
            else:
                assert p_new[key] == value, key
    # 1 / about 2 ms, the clean replies' time, not the plain mean's.
    assert reply_new["points"][0]["mean"] == pytest.approx(500, rel=2e-3)
    # The model's figures are ratios of differences of those: nine digits
    # in, some six out.
    for key in ("predicted_slowdown", "measured_slowdown", "explained", "syscalls_per_unit"):
        assert reply_new["model"][key] == pytest.approx(reply_old["model"][key], rel=1e-6), key
    assert s_new["measures"]["saturation"] == s_old["measures"]["saturation"]
    rows = {d: list(csv.DictReader(open(d / "summary.csv"))) for d in (new, old)}
    assert len(rows[new]) == len(rows[old]) == 9
    # lablib.sweep.progress's line of a point, from the same reduction.
    lines = [progress.point(d / "raw.csv", "500", "") for d in (new, old)]
    assert lines[0] == lines[1] and lines[0].startswith("reply 2.1"), lines


def test_read_raw_reduces_the_reply_rows_of_an_ns_sweep(tmp_path):
    replies = [(0.0001, 5)] * 8 + [(0.0002, 6), (0.00009, 5), (0.0005, 5)]
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs/reply-ns500-1.csv").write_text(reply_csv(replies))
    (tmp_path / "raw.csv").write_text(
        f"{RAW}\nredis,reply,,500,1,11,0.0023,56,0,0,\"every reply in logs/reply-ns500-1.csv "
        "(reqtime)\"\nredis,saturation,,500,1,2000,0.5,100,0,0,x\n")
    reply, sat = workloads.read_raw(tmp_path / "raw.csv")
    # Ten clean replies of 5 calls: the fastest and the slowest off.
    assert (reply["units"], reply["syscalls"], reply["errors"]) == (1, 5, 0)
    assert reply["seconds"] == pytest.approx(0.0001)
    assert (sat["units"], sat["seconds"]) == (2000, 0.5)


@pytest.mark.parametrize("change, message", [
    (lambda d: (d / "logs/reply-l500-1.csv").unlink(),
     "raw.csv line 4: its replies are in reply-l500-1.csv, and"),
    (lambda d: (d / "logs/reply-l0-2.csv").write_text(reply_csv([(0.002, 2000)] * 5)),
     "raw.csv line 3: the row counts 30 replies and 1 failed requests, but"),
    (lambda d: (d / "logs/reply-l0-1.csv").write_text(REPLY_HEADER),
     "raw.csv line 2: the row counts 30 replies and 0 failed requests, but"),
    (lambda d: (d / "logs/reply-l0-1.csv").write_text(REPLY_HEADER + "1,200,x,7,\n"),
     "reply-l0-1.csv line 2: seconds is 'x', not a number"),
])
def test_a_reply_row_without_its_own_log_is_one_line(root, tmp_path, change, message):
    d = apache_sweep(tmp_path / "new", True)
    change(d)
    out = report(root, tmp_path, d, "--no-plot")
    assert out.returncode == 1 and message in out.stderr, out.stderr
    assert len(out.stderr.splitlines()) == 1


@pytest.mark.parametrize("entry", [-0.0, -0.3, 0.2])
def test_an_entry_cost_near_zero_reads_0_not_minus_0(root, entry):
    """report.txt's first line once read '... after -0 ns to enter the
    delay' for a fit whose entry cost rounds to 0 from below."""
    mod = load(root)
    rows = mod.points(build_runs((100.0, 101.0), (1e7, 1e7)), "build", 4.0)
    measures = {"build": {"points": rows, "model": mod.model(rows, "build", 2),
                          "unit": "builds/h"}}
    meta = {"machine": {"cpus": 2}, "kernel": {}}
    first = analyse_output.report("kbuild", meta, 4.0, ["close"], measures, entry_ns=entry)
    first = first.splitlines()[0] if isinstance(first, str) else first[0]
    assert "after 0 ns to enter the delay" in first, first


def test_on_the_host_clock_every_figure_has_its_interval(root, tmp_path):
    """Runs differ on the host's clock: each point's mean throughput, the
    base, d½ and each point's check get a 95 % t interval over the runs,
    report.txt says them and how many points' intervals hold the model,
    and the plot draws every run."""
    from scipy import stats as sps
    d = ns_cmd_sweep(tmp_path / "host", {"delay": "bpf"},
                     ((0, 1.0), (1000, 1.02), (10000, 1.2)), 3,
                     ",0,0,0,\n,1000,60000,60000000,1000.0\n,10000,60000,600000000,10000.0\n")
    out = report(root, tmp_path, d)
    assert out.returncode == 0, out.stderr
    s = json.loads((d / "summary.json").read_text())["measures"]["cmd"]
    p0 = s["points"][0]
    lo, hi = sps.t.interval(0.95, 2, loc=p0["mean"], scale=p0["stddev"] / 3 ** 0.5)
    assert (p0["ci_low"], p0["ci_high"]) == (pytest.approx(lo), pytest.approx(hi))
    m = s["model"]
    base_lo, base_hi = sps.t.interval(0.95, 2, loc=1.002, scale=0.001 / 3 ** 0.5)
    assert (m["base_low"], m["base_high"]) == (pytest.approx(base_lo), pytest.approx(base_hi))
    assert m["half_ns_low"] == pytest.approx(base_lo / 20000 * 1e9)
    # 1.002 s + 20000 x 10 us = 1.202 s checked against 1.202 measured.
    p2 = s["points"][2]
    assert p2["check_low"] < 0 < p2["check_high"]
    assert m["check"]["covered"] == 2 and m["check"]["with_interval"] == 2
    text = " ".join((d / "report.txt").read_text().split())
    assert "95 % intervals over each point's runs: base 1.002 s a run (" in text
    assert "the model's check lies within the interval of 2 of 2 delayed points" in text
    assert (d / "cmd.png").exists()
