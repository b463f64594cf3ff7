"""Result folders for the analyser tests, made the way docs/reference.md (Conventions)
says the tools make them: meta.json plus the raw CSV files."""
import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]

META = {
    "date": "2026-11-22T09:30:00Z", "lab_commit": None,
    "kernel": {"release": "6.12.test-lab", "version": "#1 SMP PREEMPT_DYNAMIC",
               "variant": "stock", "preemption": "voluntary"},
    "machine": {"cpu_model": "test CPU", "cpus": 2, "virtual": True, "accelerator": "tcg",
                "accelerator_why": None, "qemu": "10.0.2", "pmu": False},
    "modules": {},
}
ANALYSERS = {"calibrate": "lablib.calibrate.analyse",
             "hookcost": "lablib.hookcost.analyse",
             "workload": "lablib.sweep.analyse"}


def write_meta(d, experiment, settings, **changes):
    """DIR/meta.json of an @experiment run with @settings."""
    d = pathlib.Path(d)
    d.mkdir(parents=True, exist_ok=True)
    meta = {**META, "experiment": experiment, "command": [experiment], "settings": settings,
            **changes}
    (d / "meta.json").write_text(json.dumps(meta, indent=1))
    return d


def write_csv(path, header, rows):
    lines = [",".join(header)] + [",".join(str(v) for v in r) for r in rows]
    pathlib.Path(path).write_text("\n".join(lines) + "\n")


def calibrate_dir(d, lines, loops=(0, 100, 200), batches=3, spread=2.0):
    """A calibrate folder: for each syscall NAME with (intercept, slope) in
    @lines, @batches batches per loop count whose median lies on the line,
    the others @spread ns below and above it."""
    write_meta(d, "calibrate", {"loops": list(loops), "calls": 1000, "batches": batches,
                                "rounds": 1, "warmup": 0, "cpu": 0, "syscalls": list(lines)})
    rows = []
    for name, (a, b) in lines.items():
        for n in loops:
            for i in range(batches):
                off = (i - batches // 2) * spread
                rows.append((name, n, 0, i, 1000, a + b * n + off))
    write_csv(pathlib.Path(d) / "raw.csv",
              ("syscall", "loops", "round", "batch", "calls", "ns_per_call"), rows)
    return pathlib.Path(d)


# --- folders for the clocks suite (userspace/clocks) ----------------------------------
# A host-side runner's meta.json (no clock) and a guest's (the clock it ran on).
HOST_MACHINE = {"cpu_model": "build machine", "cpus": 2, "virtual": False,
                "accelerator": "none", "accelerator_why": None, "qemu": None, "pmu": False,
                "clock": None}


def machine(clock):
    return {**META["machine"], "clock": {"kind": clock, **({"shift": 0}
                                                           if clock == "virtual" else {})}}


def analysed(analyser, d):
    """@d, analysed by @analyser (a module of lablib), no plot."""
    out = subprocess.run([sys.executable, "-m", analyser, "--no-plot", d],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return d


def clocks_report(out_dir, *dirs):
    """The clocks suite's analyse.py over @dirs into @out_dir/c: (its
    completed process, the folder, its figures by (experiment, figure),
    clocks.json)."""
    out = subprocess.run([sys.executable, "-m", "lablib.clocks.analyse", "-o", out_dir,
                          "--name", "c", *dirs], capture_output=True, text=True)
    d = pathlib.Path(out_dir) / "c"
    if out.returncode:
        return out, d, None, None
    s = json.loads((d / "clocks.json").read_text())
    return out, d, {(f["experiment"], f["figure"]): f for f in s["figures"]}, s


# --- compare (lablib.compare) ------------------------------------------------------------

def compare_dirs(*args, out):
    """lablib.compare over @args into @out/c: (its completed process,
    compare.json or None)."""
    out = pathlib.Path(out)
    p = subprocess.run([sys.executable, "-m", "lablib.compare", "-o", out, "--name", "c",
                        *map(str, args)], capture_output=True, text=True)
    c = None
    if (out / "c" / "compare.json").is_file():
        c = json.loads((out / "c" / "compare.json").read_text())
    return p, c


def compare_rows(c):
    """compare.json's rows by figure."""
    return {r["figure"]: r for r in c["rows"]}


def on_virtual_clock(d):
    """Make the meta.json of folder @d say it ran on the virtual clock."""
    meta = json.loads((pathlib.Path(d) / "meta.json").read_text())
    meta["machine"] = machine("virtual")
    (pathlib.Path(d) / "meta.json").write_text(json.dumps(meta))
    return d
