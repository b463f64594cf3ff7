"""Result folders for the analyser tests, made the way README.md (Conventions)
says the tools make them: meta.json plus the raw CSV files."""
import json
import pathlib

META = {
    "date": "2026-11-22T09:30:00Z", "lab_commit": None,
    "kernel": {"release": "6.12.test-lab", "version": "#1 SMP PREEMPT_DYNAMIC",
               "variant": "stock", "preemption": "voluntary"},
    "machine": {"cpu_model": "test CPU", "cpus": 2, "virtual": True, "accelerator": "tcg",
                "accelerator_why": None, "qemu": "10.0.2", "pmu": False},
    "modules": {},
}
ANALYSERS = {"calibrate": "userspace/calibrate/analyse.py",
             "irqhook": "userspace/irqhook/analyse.py",
             "irqhook-sweep": "userspace/irqhook/sweep_report.py",
             "trace": "userspace/irqhook/trace_report.py",
             "hookcost": "userspace/hookcost/analyse.py",
             "workload": "workloads/analyse.py"}


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


IRQHOOK_SETTINGS = {"events": 2000, "period_us": 16000, "loads": 16, "load_sleep_ns": 1000,
                    "class": "normal", "read_cpu": 0, "write_cpu": 0, "load_cpus": [0],
                    "traced": False}


def irqhook_dir(d, switching, wakeup, read_tid=100, **settings):
    """An irqhook folder with events of the given switching and wake-up
    times (ns) and a tasks.csv naming @read_tid the reader."""
    write_meta(d, "irqhook", {**IRQHOOK_SETTINGS, "events": len(switching), **settings})
    rows = []
    t = 100_000_000_000
    for i, (sw, wk) in enumerate(zip(switching, wakeup)):
        call = t + i * 16_000_000
        rows.append((i, i + 1, call, call + 1000, call + 1000 + wk, call + sw, sw, wk))
    write_csv(pathlib.Path(d) / "events.csv",
              ("event", "seq", "call_ns", "write_ns", "wake_ns", "return_ns",
               "switching_ns", "wakeup_ns"), rows)
    write_csv(pathlib.Path(d) / "tasks.csv", ("role", "index", "tid", "policy", "priority", "cpu"),
              [("read", 0, read_tid, "SCHED_OTHER", 0, 0),
               ("write", 0, read_tid + 1, "SCHED_OTHER", 0, 0),
               ("load", 0, read_tid + 2, "SCHED_OTHER", 0, 0)])
    return pathlib.Path(d)
