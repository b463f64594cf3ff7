"""rt-compare on the build machine: the square-wave analysis finds the
right limit on made-up edge timestamps, cyclictest's JSON histograms and
perf stat's CSV are read right (overflows, <not supported>), the
comparison gives lablib.compare's verdicts, the whole
analyser on a made-up two-kernel folder, the tools' and scripts' bad
inputs, and 'make deb' packages a kernel with the lab's modules."""
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

import plotcheck
from resultdirs import compare_dirs, compare_rows, on_virtual_clock, write_csv, write_meta
from lablib.experiments import rtcompare
from lablib.readers import ftrace
from lablib.rtcompare import analyse
import runners

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "tests/host/data"
cli = analyse.cli

ANALYSER = "lablib.rtcompare.analyse"
SQUAREWAVE_PY = [sys.executable, "-m", "lablib.rtcompare.squarewave"]


def edges(freq, periods, stretch=1.0, jitter=()):
    """Edge times of a wave at @freq whose every period is @stretch times
    the requested one; @jitter adds ns to the edges by index."""
    half = 0.5e9 / freq * stretch
    t = [int(1e9 + i * half) for i in range(2 * periods + 1)]
    for i, j in jitter:
        t[i] += j
    return t


def wave_dir(d, waves):
    write_meta(d, "squarewave", {"impl": d.name})
    rows = [(f, i, t) for f, ts in waves.items() for i, t in enumerate(ts)]
    write_csv(d / "edges.csv", ("freq_hz", "edge", "t_ns"), rows)
    return d


# --- the square wave -------------------------------------------------------------

def test_square_wave_limit_is_the_highest_frequency_held_within_10_percent(tmp_path):
    # 9 % slow at 1 kHz holds, 11 % slow at 2 kHz does not, 5 kHz holds again
    # (the limit is the highest that holds), 10 kHz is twice too slow.
    d = wave_dir(tmp_path / "c-rt-idle", {
        100: edges(100, 50), 1000: edges(1000, 50, 1.09), 2000: edges(2000, 50, 1.11),
        5000: edges(5000, 50, 0.95), 10000: edges(10000, 50, 2.0)})
    w = rtcompare.read_wave(d)
    assert [f for f, v in w.items() if v["held"]] == [100, 1000, 5000]
    assert w[1000]["mean_err"] == pytest.approx(0.09, abs=1e-4)
    assert w[10000]["mean_err"] == pytest.approx(1.0, abs=1e-4)
    assert w[100]["periods"] == 50
    assert rtcompare.highest_held(w) == 5000


def test_square_wave_p99_limit_sees_a_late_edge_the_mean_hides(tmp_path):
    # One period in 50 at 1 kHz is 3 ms late: the mean moves 6 %, the p99 200 %.
    late = edges(1000, 50)
    late = late[:21] + [t + 3_000_000 for t in late[21:]]
    w = rtcompare.read_wave(wave_dir(tmp_path / "python-idle", {100: edges(100, 50),
                                                             1000: late}))
    assert w[1000]["held"] and abs(w[1000]["mean_err"] - 0.06) < 1e-3
    assert rtcompare.highest_held(w) == 1000
    assert rtcompare.highest_held(w, "p99_err") == 100


def test_no_frequency_held_is_none(tmp_path):
    w = rtcompare.read_wave(wave_dir(tmp_path / "python-loaded", {1000: edges(1000, 10, 3)}))
    assert rtcompare.highest_held(w) is None


# --- cyclictest and perf stat --------------------------------------------------------

def cyclictest_json(path, threads):
    """threads: [(hist {us: count}, overflow, max)]."""
    out = {"thread": {}}
    for i, (hist, overflow, top) in enumerate(threads):
        n = sum(hist.values()) + overflow
        avg = (sum(b * c for b, c in hist.items()) + top * overflow) / n
        out["thread"][str(i)] = {"histogram": {str(b): c for b, c in hist.items()},
                                 "cycles": n, "min": min(hist), "max": top, "avg": avg,
                                 "cpu": i}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out))
    return path


def test_cyclictest_percentiles_count_overflows_at_the_maximum(tmp_path):
    # 995 samples of 10 us and 5 past the histogram's end (max 25000 us):
    # p99 is still 10, p99.9 is in the overflow.
    p = cyclictest_json(tmp_path / "loaded.json", [({10: 995}, 5, 25000),
                                                   ({5: 500, 6: 500}, 0, 6)])
    c = rtcompare.read_cyclictest(p)
    t0, t1 = c["threads"]
    assert (t0["n"], t0["overflow"], t0["p99"], t0["p999"], t0["max"]) == (
        1000, 5, 10, 25000, 25000)
    assert t1["p99"] == 6 and t1["overflow"] == 0
    assert c["pooled"]["n"] == 2000 and c["pooled"]["max"] == 25000
    assert c["hist"] == {"us": [5, 6, 10], "count": [500, 500, 995]}


def test_cyclictest_thread_stopped_before_its_first_cycle_is_left_out(tmp_path):
    """-b ends every thread at once: one that never ran reports cycles 0,
    min 1000000 and max 0, which must not reach the statistics."""
    p = cyclictest_json(tmp_path / "traced.json", [({40: 90, 900: 1}, 0, 900)])
    j = json.loads(p.read_text())
    j["thread"]["1"] = {"histogram": {}, "cycles": 0, "min": 1000000, "max": 0, "avg": 0.0,
                        "cpu": 1}
    p.write_text(json.dumps(j))
    c = rtcompare.read_cyclictest(p)
    assert [t["thread"] for t in c["threads"]] == [0] and c["unstarted"] == [1]
    assert (c["pooled"]["n"], c["pooled"]["min"], c["pooled"]["max"]) == (91, 40, 900)


def test_cyclictest_text_output_stands_in_for_malformed_json(tmp_path):
    (tmp_path / "idle.json").write_text('{"thread": {"0": {"histogram": {"12": ,}}}}')
    (tmp_path / "idle.txt").write_text(
        "# /dev/cpu_dma_latency set to 0us\n# Histogram\n000011 000003\t000000\n"
        "000012 000006\t000004\n000013 000001\t000000\n# Total: 000000010 000000004\n"
        "# Min Latencies: 00011 00012\n# Avg Latencies: 00012 00012\n"
        "# Max Latencies: 00013 00012\n# Histogram Overflows: 00000 00000\n# Thread 0:\n")
    c = rtcompare.read_cyclictest(tmp_path / "idle.json")
    assert c["from_text"] is True
    assert [(t["n"], t["min"], t["max"]) for t in c["threads"]] == [(10, 11, 13), (4, 12, 12)]
    assert c["hist"] == {"us": [11, 12, 13], "count": [3, 10, 1]}
    (tmp_path / "idle.txt").write_text("nothing\n")
    with pytest.raises(ValueError, match="not cyclictest -h output"):
        rtcompare.read_cyclictest(tmp_path / "idle.json")


def test_perf_stat_reads_not_supported_as_missing(tmp_path):
    """Repeats of perf stat as guest.sh writes them (a real file of perf
    6.1 without a PMU): the events counted, summarised over the repeats,
    and those <not supported>."""
    real = DATA / "perf/stat-no-pmu.csv"
    for r in (1, 2):
        (tmp_path / f"unsorted-r{r}.perf").write_text(real.read_text())
        (tmp_path / f"unsorted-r{r}.json").write_text(json.dumps(
            {"seconds": 0.02 * r, "user_s": 0.01, "sys_s": 0.0}))
    got = rtcompare.read_perfstat(tmp_path)["unsorted"]
    assert got["runs"] == 2
    assert got["task-clock"]["mean"] == 19.62 and got["task-clock"]["unit"] == "ms"
    assert got["page-faults"]["n"] == 2 and got["page-faults"]["unit"] == "count"
    assert got["seconds"]["max"] == 0.04 and got["values"]["seconds"] == [0.02, 0.04]
    assert got["unsupported"] == ["branch-misses", "branches", "cycles", "instructions"]
    assert "cycles" not in got and "cycles" not in got["values"]


# --- the whole analyser ---------------------------------------------------------------

def kernel_dir(d, variant, ct_max, task_ms, wave_stretch):
    write_meta(d, "rt-compare", {"variant": variant}, kernel={
        "release": f"6.12.test-lab{'' if variant == 'stock' else '-rt'}",
        "version": "#1 SMP PREEMPT_RT" if variant == "rt" else "#1 SMP PREEMPT_DYNAMIC",
        "variant": variant, "preemption": "rt" if variant == "rt" else "voluntary"})
    write_csv(d / "skipped.csv", ("member", "reason"), [])
    for load, top in (("idle", ct_max // 2), ("loaded", ct_max)):
        cyclictest_json(d / "cyclictest" / f"{load}.json",
                        [({10: 900, 20: 99, top: 1}, 0, top), ({12: 1000}, 0, 12)])
    ps = d / "perfstat"
    ps.mkdir()
    for r, jit in enumerate((-1, 0, 1), 1):
        for order, f in (("unsorted", 2), ("sorted", 1)):
            (ps / f"{order}-r{r}.perf").write_text(
                f"{task_ms * f + jit},msec,task-clock,1,100.00,1,CPUs utilized\n"
                "<not supported>,,cycles,0,100.00,,\n")
            (ps / f"{order}-r{r}.json").write_text(json.dumps(
                {"seconds": task_ms * f / 1e3, "user_s": task_ms * f / 1e3, "sys_s": 0.0}))
    for impl in ("python", "c-rt"):
        for load in ("idle", "loaded"):
            wave_dir(d / "squarewave" / f"{impl}-{load}", {
                100: edges(100, 20), 1000: edges(1000, 20, wave_stretch)})
    return d


def test_analyser_compares_two_kernels(tmp_path):
    d = tmp_path / "rt-compare-20261123-100000"
    write_meta(d, "rt-compare", {"variants": "stock,rt"})
    kernel_dir(d / "stock", "stock", 900, 1000, 1.5)
    kernel_dir(d / "rt", "rt", 60, 1030, 1.02)
    out = subprocess.run([sys.executable, "-m", ANALYSER, str(d)], cwd=ROOT,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    for f in ("comparison.json", "comparison.csv", "report.txt", "cyclictest-idle.png",
              "cyclictest-loaded.png", "squarewave.png"):
        assert (d / f).stat().st_size > 0, f
    rows = {r["figure"]: r for r in json.loads((d / "comparison.json").read_text())["rows"]}
    mx = rows["cyclictest loaded max"]
    assert (mx["base"], mx["other"]) == (900, 60)
    assert mx["ratio"] == pytest.approx(60 / 900)
    tc = rows["perf stat sortsum unsorted: task-clock"]
    assert tc["base"] == pytest.approx(2000) and tc["other"] == pytest.approx(2060)
    assert (tc["base_spread"], tc["other_spread"]) == (pytest.approx(2), pytest.approx(2))
    # The made-up kernels ran on the host's clock: one boot a kernel is one run.
    assert tc["verdict"] == "inconclusive" and tc["why"] == "one run a side: no test"
    sq = rows["square wave c-rt-idle: highest Hz, mean period within 10 %"]
    assert (sq["base"], sq["other"]) == (100, 1000)
    text = (d / "report.txt").read_text()
    assert "rt against stock" in text and "not supported here: cycles" in text


def test_kernels_compared_with_compares_verdicts(tmp_path):
    """rt-compare's table says lablib.compare's verdicts, one boot a
    kernel: on the virtual clock identical against itself, a change
    inconclusive (one boot cannot tell it from a boot that lands off) and
    never worse, inconclusive on the host's; the spread inside the boot is
    kept as a description."""
    stock = rtcompare.read_kernel(kernel_dir(tmp_path / "stock", "stock", 900, 1000, 1.5))
    rt = rtcompare.read_kernel(kernel_dir(tmp_path / "rt", "rt", 60, 1030, 1.02))
    same = analyse.compare(stock, stock, "virtual")
    assert same and {r["verdict"] for r in same} == {"identical"}
    rows = {r["figure"]: r for r in analyse.compare(stock, rt, "virtual")}
    mx = rows["cyclictest loaded max"]
    assert mx["verdict"] == "inconclusive" and mx["worse"] is False     # 900 -> 60 us
    tc = rows["perf stat sortsum unsorted: task-clock"]
    assert tc["verdict"] == "inconclusive" and tc["worse"] is False     # +3 % CPU time
    assert rows["cyclictest idle min"]["verdict"] == "identical"
    host = analyse.compare(stock, rt, "host")
    assert {r["verdict"] for r in host} == {"inconclusive"}
    assert not any(r["worse"] for r in host)


def test_pictures_name_the_kernels_they_compare(tmp_path, monkeypatch):
    """Every picture's headline: what it shows, the kernels against each
    other, then each kernel's release, variant and preemption and, once,
    the machine they shared; a machine that differs is the first kernel's,
    and the title says so."""
    d = tmp_path / "rt-compare-20261123-100000"
    write_meta(d, "rt-compare", {"variants": "stock,rt"})
    kernel_dir(d / "stock", "stock", 900, 1000, 1.5)
    kernel_dir(d / "rt", "rt", 60, 1030, 1.02)
    figures = plotcheck.record(monkeypatch)
    assert cli.main("rt-compare", "x", analyse.add_args, analyse.work, [str(d)]) == 0
    said = ("kernel 6.12.test-lab (stock, voluntary) against kernel 6.12.test-lab-rt "
            "(rt, rt), 2 CPUs, accelerator tcg (QEMU 10.0.2), no PMU")
    for name, what in (("cyclictest-idle.png", "cyclictest idle"),
                       ("cyclictest-loaded.png", "cyclictest loaded"),
                       ("squarewave.png", "the square wave's period error")):
        head = figures[name][0]["figure_title"]
        assert head.startswith(f"rt-compare: {what}, stock against rt\n"), head
        # The subtitle, wrapped at spaces.
        assert " ".join(head.split("\n")[1:]) == said, head
    meta = json.loads((d / "rt/meta.json").read_text())
    meta["machine"]["cpus"] = 4
    (d / "rt/meta.json").write_text(json.dumps(meta))
    figures.clear()
    assert cli.main("rt-compare", "x", analyse.add_args, analyse.work, [str(d)]) == 0
    head = figures["cyclictest-idle.png"][0]["figure_title"]
    assert head.startswith("rt-compare: cyclictest idle, stock against rt (the machine: "
                           "stock's; each kernel's in report.txt)\nkernel 6.12.test-lab "
                           "(stock, voluntary), 2 CPUs"), head


@pytest.mark.parametrize("variants, order", [
    ("stock,stock:preempt=full,rt", ["stock", "stock-preempt-full", "rt"]),
    ("rt,stock:preempt=full,stock", ["stock", "rt", "stock-preempt-full"]),
    (None, ["stock", "rt", "stock-preempt-full"]),
])
def test_kernels_come_in_the_order_they_ran_stock_first(tmp_path, variants, order):
    """Stock is the base the others are set against; the others keep the
    order --variants gave them (it was alphabetical: rt before
    stock-preempt-full whatever the run said), alphabetical without it."""
    d = tmp_path / "rt-compare-20261129-100000"
    write_meta(d, "rt-compare", {"variants": variants} if variants else {})
    for k in ("rt", "stock-preempt-full", "stock"):
        kernel_dir(d / k, k.split("-")[0], 100, 1000, 1.0)
    assert list(rtcompare.kernels_of(d)) == order


def test_analyser_says_what_is_wrong_with_a_folder(tmp_path):
    out = subprocess.run([sys.executable, "-m", ANALYSER, str(tmp_path)], cwd=ROOT,
                         capture_output=True, text=True)
    assert out.returncode == 1
    assert out.stderr.count("\n") == 1 and "no kernel folders" in out.stderr


# --- the tools and scripts ---------------------------------------------------------------

@pytest.fixture(scope="module")
def built():
    subprocess.run(["make", "-s", "-C", ROOT / "userspace/lib"], check=True)
    subprocess.run(["make", "-s", "-C", ROOT / "userspace/rtcompare"], check=True)
    return ROOT / "userspace/rtcompare"


def test_sortsum_sums_the_same_sorted_or_not(built):
    runs = [json.loads(subprocess.run([built / "sortsum", "--passes", "3", *extra],
                                      capture_output=True, text=True, check=True).stdout)
            for extra in ([], ["--sorted"])]
    assert runs[0]["sum"] == runs[1]["sum"] > 0
    assert (runs[0]["sorted"], runs[1]["sorted"]) == (False, True)
    assert runs[0]["user_s"] >= 0 and runs[0]["seconds"] > 0


@pytest.mark.parametrize("args", [["--passes", "0"], ["--passes", "x"], ["--bogus"], ["extra"]])
def test_sortsum_bad_input(built, args):
    out = subprocess.run([built / "sortsum", *args], capture_output=True, text=True)
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr


def test_squarewave_writes_edges(built, tmp_path):
    out = subprocess.run([built / "squarewave", "-q", "-f", "200,1000", "-n", "10", "-o",
                          tmp_path], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    d = pathlib.Path(out.stdout.strip())
    meta = json.loads((d / "meta.json").read_text())
    assert meta["settings"]["freqs_hz"] == [200, 1000]
    assert meta["settings"]["impl"] == "c-nanosleep"
    w = rtcompare.read_wave(d)
    assert sorted(w) == [200, 1000] and w[200]["periods"] == 9
    # nanosleep sleeps at least what it is asked: never early.
    assert w[200]["mean_period_ns"] >= 5e6


@pytest.mark.parametrize("tool", ["squarewave", "python"])
@pytest.mark.parametrize("args", [["-f", "0"], ["-f", "1:x"], ["-n", "1"], ["-C", "4096"],
                                  ["--seconds", "0"]])
def test_squarewave_bad_input_leaves_nothing(built, tmp_path, tool, args):
    cmd = SQUAREWAVE_PY if tool == "python" else [built / tool]
    out = subprocess.run([*cmd, "-o", tmp_path / "out", *args], capture_output=True, text=True)
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert not (tmp_path / "out").exists()


def as_nobody():
    os.setgid(65534)
    os.setuid(65534)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to become nobody")
def test_squarewave_rt_mode_needs_root(built, tmp_path):
    tmp_path.chmod(0o777)
    out = subprocess.run([built / "squarewave", "--mode", "rt", "-o", tmp_path],
                         capture_output=True, text=True, preexec_fn=as_nobody)
    assert out.returncode == 1 and "needs root" in out.stderr
    assert list(tmp_path.iterdir()) == []


def test_squarewave_python_writes_the_same_files(built, tmp_path):
    out = subprocess.run([*SQUAREWAVE_PY, "-q", "-f", "500", "-n", "5", "-o", tmp_path,
                          "--name", "py"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    w = rtcompare.read_wave(tmp_path / "py")
    assert w[500]["periods"] == 4
    assert json.loads((tmp_path / "py/meta.json").read_text())["settings"]["impl"] == "python"


def captured_kernel_dir(d, variant, capture, built):
    """A kernel folder of real output: cyclictest runs captured on the
    build machine (tests/host/data, rt-compare's settings) and square waves
    the three implementations draw here and now."""
    write_meta(d, "rt-compare", {"variant": variant})
    write_csv(d / "skipped.csv", ("member", "reason"), [])
    (d / "cyclictest").mkdir()
    for load in ("idle", "loaded"):
        shutil.copy(DATA / f"rt-tests/cyclictest-h20000-{capture}-{load}.json",
                    d / "cyclictest" / f"{load}.json")
        for impl, cmd in (("python", SQUAREWAVE_PY),
                          ("c-nanosleep", [built / "squarewave"]),
                          ("c-rt", [built / "squarewave", "--mode", "rt"])):
            if impl == "c-rt" and os.geteuid() != 0:
                continue
            subprocess.run([*cmd, "-q", "-f", "100,1000,5000,20000", "-n", "10", "--seconds",
                            "1", "-o", d / "squarewave", "--name", f"{impl}-{load}"],
                           check=True)
    return d


def test_plots_of_real_runs_are_readable(built, tmp_path, monkeypatch):
    """cyclictest-idle.png, cyclictest-loaded.png and squarewave.png of a
    run made of real output: numeric axes, few ticks, every series.  (The
    histograms once came back from comparison.json with their buckets as
    strings: thousands of categories.)"""
    d = tmp_path / "rt-compare-20261125-100000"
    write_meta(d, "rt-compare", {"variants": "stock,rt"})
    captured_kernel_dir(d / "stock", "stock", "a", built)
    captured_kernel_dir(d / "rt", "rt", "b", built)
    figures = plotcheck.record(monkeypatch)
    assert cli.main("rt-compare", "x", analyse.add_args, analyse.work, [str(d)]) == 0
    assert sorted(figures) == ["cyclictest-idle.png", "cyclictest-loaded.png",
                               "squarewave.png"]
    comparison = json.loads((d / "comparison.json").read_text())
    for load in ("idle", "loaded"):
        [ax] = figures[f"cyclictest-{load}.png"]
        plotcheck.assert_readable([ax])
        assert (ax["xscale"], ax["yscale"]) == ("log", "log")
        assert [e.split(":")[0] for e in ax["legend"]] == ["stock", "rt"]
        assert ax["patches"] == 2
        for v in ("stock", "rt"):
            hist = comparison["kernels"][v]["cyclictest"][load]["hist"]
            assert all(isinstance(b, int) for b in hist["us"]) and hist["us"] == \
                sorted(hist["us"])
    impls = 3 if os.geteuid() == 0 else 2
    axes = figures["squarewave.png"]
    plotcheck.assert_readable(axes)
    for ax, load in zip(axes, ("idle", "loaded")):
        assert ax["title"].startswith(f"square wave, {load}")
        assert ax["lines"] == 2 * impls and len(ax["legend"]) == 2 * impls, ax["legend"]
        assert {e.split()[0] for e in ax["legend"]} == {"stock", "rt"}


@pytest.mark.parametrize("script,args,word", [
    ("guest.sh", ["-", "--check", "--only", "cyclictest,bogus"], "--only"),
    ("guest.sh", ["-", "--check", "-r", "0"], "--repeats"),
    ("guest.sh", ["-", "--check", "--freqs", "1:"], "--freqs"),
    ("guest.sh", ["-", "--check", "--wat"], "unknown argument"),
    ("guest.sh", ["-", "--check", "--delay-ns", "0,x"], "--delay-ns"),
    ("guest.sh", ["-", "--check", "--delay-loops", "5"], "--delay-loops"),
    ("run.sh", ["--variants", "stock,nope"], "--variants wants a kernel variant"),
    ("run.sh", ["--variants", "stock:preempt=full;reboot"], "--variants: boot options"),
    ("run.sh", ["--variants", "nope:preempt=full"], "--variants wants a kernel variant"),
    ("run.sh", ["--into", "/tmp"], "--into goes with --here"),
    ("run.sh", ["--", "--ct-loops", "x"], "--ct-loops"),
])
def test_scripts_refuse_bad_arguments_before_doing_anything(built, script, args, word):
    before = set((ROOT / "results").glob("*")) if (ROOT / "results").exists() else set()
    out = subprocess.run([built / script, *args], capture_output=True, text=True)
    assert out.returncode == 2 and word in out.stderr, out.stderr
    assert len(out.stderr.splitlines()) == 1, out.stderr
    after = set((ROOT / "results").glob("*")) if (ROOT / "results").exists() else set()
    assert after == before


# --- packaging -------------------------------------------------------------------------

def test_make_deb_packages_the_kernel_and_the_lab_modules(root):
    kobj = root / "build/obj"
    image = kobj / "arch/x86/boot/bzImage"
    if not image.exists():
        pytest.fail("the lab kernel is not built: run 'make kernel' first")
    before = image.stat()
    out = subprocess.run(["make", "-s", "-C", root, "deb", "VARIANT=stock"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    # Packaging leaves the built kernel alone: make test's VMs boot it
    # while this runs beside them.
    after = image.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    rel = (kobj / "include/config/kernel.release").read_text().strip()
    debs = list((root / "build/deb/stock").glob(f"linux-image-{rel}_*.deb"))
    assert len(debs) == 1, list((root / "build/deb/stock").iterdir())
    files = subprocess.run(["dpkg-deb", "-c", debs[0]], capture_output=True, text=True,
                           check=True).stdout
    assert f"/boot/vmlinuz-{rel}" in files
    for m in ("delay", "hooktest"):
        assert f"/modules/{rel}/extra/{m}.ko" in files, m
    assert f"/modules/{rel}/modules.dep" in files
    info = subprocess.run(["dpkg-deb", "-f", debs[0], "Package"], capture_output=True,
                          text=True, check=True).stdout.strip()
    assert info == f"linux-image-{rel}"


def test_make_deb_refuses_an_unknown_compression_before_building(root):
    out = subprocess.run(["scripts/build-kernel.sh", "--deb"], cwd=root, capture_output=True,
                         text=True, env={**os.environ, "KDEB_COMPRESS": "bzip9"})
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "build-kernel.sh: KDEB_COMPRESS must be gzip, xz, zstd or none, not 'bzip9'"]


def test_findings_say_where_rt_wins_and_what_it_costs():
    def row(figure, unit, base, other, verdict):
        return {"figure": figure, "unit": unit, "base": base, "other": other,
                "ratio": other / base, "verdict": verdict}
    rows = [row("cyclictest loaded max", "us", 1000, 50, "changed"),
            row("cyclictest loaded p99.9", "us", 800, 40, "changed"),
            row("cyclictest loaded mean", "us", 10, 12, "changed"),
            row("perf stat sortsum unsorted: task-clock", "ms", 100, 102, "inconclusive"),
            row("calibration getppid intercept", "ns", 600, 660, "changed")]
    f = analyse.findings(rows, ["stock", "rt"], emulated=False)
    assert f[0].startswith("Tail latency") and "1,000 -> rt 50 us (x0.05, changed)" in f[0]
    assert "rt holds the tail here" in f[0]
    assert "x1.20, changed" in f[1] and "dearer on rt" in f[1]
    assert "task-clock stock 100 -> rt 102 ms (x1.02, inconclusive)" in f[2]
    assert "stock 600 -> rt 660 ns (x1.10, changed)" in f[3]
    assert not any("TCG" in s for s in f)
    rows[1] = row("cyclictest loaded p99.9", "us", 800, 900, "changed")
    assert "rt does not hold the tail better here" in analyse.findings(rows, ["stock", "rt"],
                                                                        True)[0]


def test_delay_member_of_a_real_run(tmp_path, monkeypatch):
    """The delay member (cyclictest against a hold of known length) of a
    real run under the virtual clock, stock against stock booted
    preempt=full, with two kinds of hold (the second a copy of the first,
    as a run of --delay-holds spin@exit,spin@entry): a table a kind, in
    the order the run gave them, with each kernel's max / p99.9 / mean per
    hold; delay.png a panel a kind, one line a kernel and figure and the
    hold itself."""
    d = tmp_path / "rt-compare-20261125-134120"
    write_meta(d, "rt-compare", {"variants": "stock,stock:preempt=full"})
    for k in ("stock", "stock-preempt-full"):
        write_meta(d / k, "rt-compare", {"variant": "stock", "kernel": k,
                                         "delay_holds": "spin@exit,spin@entry"})
        write_csv(d / k / "skipped.csv", ("member", "reason"), [])
        for kind in ("spin-entry", "spin-exit"):
            (d / k / "delay" / kind).mkdir(parents=True)
            for ns in (0, 50000):
                shutil.copy(DATA / f"rt-tests/delay/{k}-ns-{ns}.json",
                            d / k / "delay" / kind / f"ns-{ns}.json")
    figures = plotcheck.record(monkeypatch)
    assert cli.main("rt-compare", "x", analyse.add_args, analyse.work, [str(d)]) == 0
    comparison = json.loads((d / "comparison.json").read_text())
    assert list(comparison["kernels"]["stock"]["delay"]) == ["spin-exit", "spin-entry"]
    holds = {k: {h["ns"]: h for h in comparison["kernels"][k]["delay"]["spin-entry"]["holds"]}
             for k in ("stock", "stock-preempt-full")}
    # The stock kernel cannot preempt the hold: its max follows it.
    assert holds["stock"][0]["max"] == 4 and holds["stock"][50000]["max"] == 51
    assert holds["stock-preempt-full"][50000]["max"] == 4
    text = (d / "report.txt").read_text()
    exit_at, entry_at = (text.index(f"holds for a known time, spinning at {w}")
                         for w in ("exit", "entry"))
    assert exit_at < entry_at
    row = "      50            51 / 51 / 23.7             4 / 3.7 / 2.9"
    assert text.index(row, exit_at) < entry_at and text.index(row, entry_at)
    axes = figures["delay.png"]
    plotcheck.assert_readable(axes)
    assert len(axes) == 2
    # Both kernels' meta.json say the same kernel: it is said once.
    head = axes[0]["figure_title"]
    assert head.startswith("rt-compare: cyclictest on CPU 0 against a normal task's hold of "
                           "known length, stock against stock-preempt-full\nkernel "
                           "6.12.test-lab (stock, voluntary), 2 CPUs"), head
    for ax, where in zip(axes, ("exit", "entry")):
        assert where in ax["title"]
        assert ax["lines"] == 5 and ax["legend"][0] == "the hold itself"
        assert ax["legend"][1:] == ["stock: max", "stock: p99.9", "stock-preempt-full: max",
                                    "stock-preempt-full: p99.9"]


def test_a_delay_member_of_one_kind_in_the_folder_itself(tmp_path):
    """A run from before the kinds of hold kept its ns-*.json in delay/
    itself, and said in meta.json how it held: read as that one kind."""
    k = tmp_path / "stock"
    write_meta(k, "rt-compare", {"variant": "stock", "delay_mode": "sleep"})
    (k / "delay").mkdir()
    shutil.copy(DATA / "rt-tests/delay/stock-ns-50000.json", k / "delay" / "ns-50000.json")
    delay = rtcompare.read_kernel(k)["delay"]
    assert list(delay) == ["sleep-entry"] and delay["sleep-entry"]["holds"][0]["max"] == 51


def test_worst_line_says_whether_the_traced_worst_covers_the_measured_max():
    held = [{"comm": "sortsum", "pid": 74, "ns": 10_228, "events": {},
             "ran": {"wakes cyclictest-77": 1}, "delay_ns": []}]
    tr = {"max": 12, "cycles": 60_000, "measured_max": 11, "trace": True,
          "worst": {"latency_ns": 11_526, "count": 60_000,
                    "delay": {"cpu": 0, "latency_ns": 10_228, "timer_late_ns": 649,
                              "held": held}}}
    line = analyse.worst_line(tr)
    assert "60,000 of 60,000 wake-ups" in line and "its worst, 11.5 us" in line
    assert "sortsum-74 10.2 us (wakes cyclictest-77)" in line
    assert "its timer fired 0.6 us after it was due" in line
    assert "the measured run's max, 11 us, is within it" in line
    tr["measured_max"] = 51
    assert "max, 51 us, did not recur under the trace: not explained" in \
        analyse.worst_line(tr)
    tr["worst"] = None
    assert analyse.worst_line(tr) == ": no cyclictest wake-up in its trace, nothing explained"
    tr["trace"] = False
    assert analyse.worst_line(tr) == ": no trace.dat, nothing explained"


def test_caught_line_names_what_ran_while_the_wake_up_waited(tmp_path, monkeypatch):
    """The caught member's folder as guest.sh leaves it, read through the
    captured report of a real stopped run (trace-report-caught.txt)."""
    d = tmp_path / "caught"
    d.mkdir()
    shutil.copy(DATA / "rt-tests/cyclictest-h20000-a-loaded.json", d / "cyclictest.json")
    (d / "threshold").write_text("25\n")
    (d / "trace.dat").write_text("")
    events = ftrace.parse_report((DATA / "trace-report-caught.txt").read_text())
    monkeypatch.setattr(ftrace, "read", lambda path: events)
    c = rtcompare.read_caught(d)
    assert c["threshold"] == 25 and c["caught"]["latency_us"] == 43
    line = analyse.caught_line(c)
    assert line.startswith("stopped at a 43 us wake-up (over 25) after ")
    assert "CPU 0 ran work vmstat_update (kworker/0:1-9, 86.8 us, 39.2 us of it after the " \
        "wake-up was due)" in line
    monkeypatch.setattr(ftrace, "read", lambda path: [])
    c = rtcompare.read_caught(d)
    assert c["caught"] is None
    assert analyse.caught_line(c).startswith("no wake-up over 25 us in ")

    def unreadable(path):
        raise ValueError("trace-cmd is not installed (Debian: trace-cmd)")
    monkeypatch.setattr(ftrace, "read", unreadable)
    c = rtcompare.read_caught(d)
    assert c["caught"] is None
    line = analyse.caught_line(c)
    assert line.startswith("its trace was not read (trace-cmd is not installed")
    assert "no wake-up over" not in line


# --- the runner's conventions (tests/host/runners.py) ---------------------------

RUNNER_BAD = [
    ("userspace/rtcompare/run.sh", ["--variants", "nohook"], {}, "--variants wants kernels"),
    ("userspace/rtcompare/guest.sh", ["-", "--check", "--ct-loops", "9"], {},
     "--ct-loops wants a whole number >= 10"),
    ("userspace/rtcompare/guest.sh", ["-", "--check", "--delay-holds", "nap@entry"], {},
     "--delay-holds wants MODE@WHERE items (spin or sleep @ entry or exit), not 'nap@entry'"),
    ("userspace/rtcompare/guest.sh", ["-", "--check", "--delay-holds", "spin@entry,spin@mid"],
     {}, "not 'spin@mid'"),
    ("userspace/rtcompare/guest.sh", ["-", "--check", "--delay-holds", "spin@exit,spin@exit"],
     {}, "--delay-holds names spin@exit twice"),
]


test_a_bad_value_is_status_2_and_one_line = runners.bad_value_test(RUNNER_BAD)


test_meta_json_keeps_the_whole_command_line = runners.meta_test(
    "rtcompare", ["sortsum", "squarewave"], ["--variants", "stock", "--", "--quick"], "rt-compare")


# --- compare (lablib.compare) of rt-compare's kernel folders ----------------------------

def test_compare_sets_kernel_folders_of_several_runs_against_each_other(tmp_path):
    """rt-compare's kernel folders are sides of their own (compare -a
    R1/stock R2/stock -b R1/rt R2/rt), with rt-compare's own figures and
    cyclictest's histograms bin by bin on the virtual clock."""
    runs = [tmp_path / f"r{i}" for i in (1, 2)]
    for r in runs:
        on_virtual_clock(kernel_dir(r / "stock", "stock", 900, 1000, 1.5))
        on_virtual_clock(kernel_dir(r / "rt", "rt", 60, 1030, 1.02))
    p, c = compare_dirs("-a", *(r / "stock" for r in runs), "-b", *(r / "rt" for r in runs),
                        out=tmp_path)
    assert c is not None, p.stderr
    rows = compare_rows(c)
    assert rows["cyclictest loaded max"]["verdict"] == "changed"
    assert rows["cyclictest loaded max"]["b_value"] == 60
    assert rows["perf stat sortsum unsorted: task-clock"]["ratio"] == pytest.approx(1.03)
    assert any(f.startswith("square wave c-rt-loaded: highest Hz") for f in rows)
    assert "settings.variant" in {d["key"] for d in c["differences"]}
    loaded = c["distributions"]["cyclictest loaded"]
    assert loaded["bins"]["differ"] > 0 and 0 < loaded["bins"]["moved_share"] <= 1
    assert "cyclictest idle (pooled" in p.stdout
    shutil.rmtree(tmp_path / "c")
    p, c = compare_dirs(runs[0] / "stock", runs[1] / "stock", out=tmp_path)
    assert c["distributions"]["cyclictest loaded"]["bins"]["differ"] == 0
    assert {r["verdict"] for r in c["rows"]} == {"identical"}
