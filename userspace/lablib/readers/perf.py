"""perf's output as the lab's analysers read it: `perf stat -x,` files
and the report of `perf bench sched pipe`."""
import pathlib
import re

# What perf stat writes in place of a value it does not have: no such
# counter here (no PMU under QEMU TCG), or a counter never enabled
# (perf stat -D -1 and a program that never turned it on).
NOT_COUNTED = ("<not supported>", "<not counted>")


def read_stat(path):
    """{event: value} of a perf stat -x, file, in perf's order, each event
    named as perf wrote it (cycles:u, raw_syscalls:sys_enter) and its value
    in perf's unit (task-clock and cpu-clock in ms, the others counts), or
    None for an event perf could not count (NOT_COUNTED).  ValueError
    naming the file and line for any other line that is not perf stat -x,
    output ('#' comments and blank lines apart)."""
    path = pathlib.Path(path)
    out = {}
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        f = line.split(",")
        if len(f) < 3 or not f[2]:
            raise ValueError(f"{path} line {i}: not perf stat -x, output: {line!r}")
        value, event = f[0], f[2]
        if value in NOT_COUNTED:
            out[event] = None
            continue
        try:
            out[event] = float(value)
        except ValueError:
            raise ValueError(f"{path} line {i}: {event}: {value!r} is not a number") from None
    return out


def counted(stat):
    """The events of @stat (read_stat) perf counted, with their values."""
    return {e: v for e, v in stat.items() if v is not None}


def not_counted(stat):
    """The events of @stat (read_stat) perf could not count."""
    return [e for e, v in stat.items() if v is None]


def read_bench_pipe(path):
    """us per operation (one round trip) of a `perf bench sched pipe`
    report; ValueError if it has none."""
    m = re.search(r"([\d.]+)\s+usecs/op", pathlib.Path(path).read_text())
    if not m:
        raise ValueError(f"{path}: no 'usecs/op' line: not perf bench sched pipe output")
    return float(m[1])
