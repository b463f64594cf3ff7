"""lablib/rttests.py, the one reader of rt-tests' output, on files
cyclictest 2.40 and ptsematest wrote (tests/host/data/rt-tests, see the
README there): threads and overflows, percentiles interpolated over the
histogram with the overflows counted, the text output standing in for
malformed JSON, and one-line errors on what is not their output."""
import json
import shutil

import numpy
import pytest

from conftest import ROOT

from lablib import stats
from lablib.readers import rttests

DATA = ROOT / "tests/host/data/rt-tests"
H200 = DATA / "cyclictest-h200.json"       # -t -a, 2 threads, 2000 loops, -h 200


def raw_threads(path):
    return json.loads(path.read_text())["thread"]


def expanded(t):
    """Thread @t's latencies as this test reads them: each bucket's count,
    then cycles minus the histogram's samples at the maximum."""
    hist = {int(b): c for b, c in t["histogram"].items()}
    out = [b for b in sorted(hist) for _ in range(hist[b])]
    return out + [t["max"]] * (t["cycles"] - len(out))


def text_overflows(path):
    line = next(ln for ln in path.read_text().splitlines()
                if ln.startswith("# Histogram Overflows:"))
    return [int(v) for v in line.split(":")[1].split()]


def test_threads_and_their_overflows():
    run = rttests.read_cyclictest(H200)
    raw = raw_threads(H200)
    assert [t["thread"] for t in run["threads"]] == [0, 1] and run["unstarted"] == []
    assert run["from_text"] is False and run["return_code"] == 0
    for t in run["threads"]:
        r = raw[str(t["thread"])]
        assert (t["n"], t["min"], t["avg"], t["max"], t["cpu"]) == (
            r["cycles"], r["min"], r["avg"], r["max"], r["cpu"])
        assert all(isinstance(b, int) for b in t["hist"])
    # cyclictest's own count of the samples past -h 200, in its text output.
    assert [t["overflow"] for t in run["threads"]] == text_overflows(H200.with_suffix(".txt"))
    assert run["threads"][0]["overflow"] > 0


@pytest.mark.parametrize("threads", [[0], [1], None])
def test_percentiles_interpolate_and_count_the_overflows(threads):
    run = rttests.read_cyclictest(H200)
    raw = raw_threads(H200)
    chosen = [str(t) for t in threads] if threads is not None else list(raw)
    want = sorted(v for k in chosen for v in expanded(raw[k]))
    s = rttests.summary(run, threads)
    assert list(s) == [*stats.SUMMARY_KEYS, "unit"] and s["unit"] == "us"
    assert s["n"] == len(want) == sum(raw[k]["cycles"] for k in chosen)
    for key, p in (("p50", 50), ("p90", 90), ("p99", 99), ("p999", 99.9)):
        assert s[key] == pytest.approx(numpy.percentile(want, p)), key
    # The overflows sit at the top: p99.9 of 2000 samples with 4 past the
    # histogram is the thread's maximum, far beyond the last bucket.
    if threads == [0]:
        assert s["p999"] == raw["0"]["max"] > 200
    assert s["max"] == max(raw[k]["max"] for k in chosen)
    assert s["mean"] == pytest.approx(sum(raw[k]["avg"] * raw[k]["cycles"] for k in chosen)
                                      / s["n"])
    assert s["stddev"] == pytest.approx(numpy.std(want, ddof=1))


def test_histogram_adds_up_the_chosen_threads():
    run = rttests.read_cyclictest(H200)
    raw = raw_threads(H200)
    both = rttests.histogram(run)
    assert list(both) == sorted(both) and all(isinstance(b, int) for b in both)
    for b in (14, 21, 33):
        assert both[b] == sum(raw[k]["histogram"].get(str(b), 0) for k in raw)
    assert rttests.histogram(run, [1]) == {int(b): c for b, c in raw["1"]["histogram"].items()}


def test_text_output_reads_as_the_json():
    js = rttests.read_cyclictest(H200)["threads"]
    txt = rttests.parse_text(H200.with_suffix(".txt"))
    for j, (k, t) in zip(js, sorted(txt["thread"].items())):
        assert {int(b): c for b, c in t["histogram"].items()} == j["hist"]
        assert (t["cycles"], t["min"], t["max"]) == (j["n"], j["min"], j["max"])
        assert t["avg"] == int(j["avg"])      # whole us in the text


def test_text_output_stands_in_for_malformed_json(tmp_path):
    bad = tmp_path / "idle.json"
    bad.write_text(H200.read_text().replace('"10": 1,', '"10": ,', 1))
    shutil.copy(H200.with_suffix(".txt"), tmp_path / "idle.txt")
    run = rttests.read_cyclictest(bad)
    assert run["from_text"] is True and "not JSON" in run["json_error"]
    good = rttests.read_cyclictest(H200)
    assert [(t["n"], t["overflow"], t["max"]) for t in run["threads"]] == \
        [(t["n"], t["overflow"], t["max"]) for t in good["threads"]]
    (tmp_path / "idle.txt").write_text("nothing\n")
    with pytest.raises(ValueError, match="not cyclictest -h output"):
        rttests.read_cyclictest(bad)
    (tmp_path / "idle.txt").unlink()
    with pytest.raises(ValueError, match="not JSON"):
        rttests.read_cyclictest(bad)


def test_thread_stopped_before_its_first_cycle_is_left_out(tmp_path):
    """-b ends every thread at once: one that never ran reports cycles 0,
    min 1000000 and max 0, which must not reach the statistics."""
    j = json.loads(H200.read_text())
    j["thread"]["2"] = {"histogram": {}, "cycles": 0, "min": 1000000, "max": 0, "avg": 0.0,
                        "cpu": 0, "node": 0}
    (tmp_path / "traced.json").write_text(json.dumps(j))
    run = rttests.read_cyclictest(tmp_path / "traced.json")
    assert [t["thread"] for t in run["threads"]] == [0, 1] and run["unstarted"] == [2]
    assert rttests.summary(run)["min"] == min(t["min"] for t in run["threads"])
    with pytest.raises(ValueError, match="no results of thread 2"):
        rttests.summary(run, [2])


def test_contradictory_figures_are_named():
    run = rttests.read_cyclictest(DATA / "cyclictest-posix.json")
    assert rttests.contradiction(run["threads"][0]) is None
    # What cyclictest -x wrote under TCG (negative latencies, an overflowed average).
    t = {**run["threads"][0], "min": 2528.0, "max": -447.0, "avg": 1.6e19}
    assert "contradict each other" in rttests.contradiction(t)


@pytest.mark.parametrize("text", ["{}", '{"thread": {}}', "[1, 2]",
                                  (DATA / "ptsematest.json").read_text()])
def test_not_cyclictest_json(tmp_path, text):
    (tmp_path / "x.json").write_text(text)
    with pytest.raises(ValueError, match="not a cyclictest --json file"):
        rttests.read_cyclictest(tmp_path / "x.json")


def test_ptsematest():
    raw = json.loads((DATA / "ptsematest.json").read_text())["thread"]["0"]
    got = rttests.read_ptsematest(DATA / "ptsematest.json")
    assert got == {"n": raw["sender"]["samples"], "min": raw["receiver"]["min"],
                   "mean": raw["receiver"]["avg"], "max": raw["receiver"]["max"],
                   "unit": "us"}
    with pytest.raises(ValueError, match="not a ptsematest --json file"):
        rttests.read_ptsematest(DATA / "cyclictest-nanosleep.json")
