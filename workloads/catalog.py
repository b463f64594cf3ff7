"""The workloads a sweep can run, each declared in one file.

A workload is a shell file in workloads/lib/ (or in a folder of
LAB_WORKLOADS_DIR, colon-separated: a workload of one's own) that the
guest's sweep sources for its steps (wl_check, wl_prepare, wl_run ...)
and that begins with its declaration, lines NAME=VALUE at the start of a
line, a plain value or one in double quotes, no expansion:

  WL_ABOUT       one line: what it runs (the sweep's --help lists it)
  WL_LOOPS       default loop counts                 WL_REPEATS  runs a point
  WL_REPEATS_VIRTUAL  runs a point on the virtual clock (default WL_REPEATS)
  WL_STAGE       host, guest: where it is staged
  WL_COST_SLOPE  how a point's cost grows with its delay (default 1)
  WL_POINT_SECONDS  the host's seconds of an undelayed point on the
                 virtual clock, one run (TCG, two VMs at a time): with the
                 slope, what point_costs() says a sweep will take
  WL_IN_ALL      1: one of 'all'
  WL_PACKAGES    the Debian packages it needs (make deps installs them)
  WL_MEASURE     "NAME FACTOR UNIT WORD": throughput = FACTOR x units /
                 seconds, e.g. "grep 60 greps/min grep"; a server has the
                 server measures instead (reply, saturation, server)
  WL_SERVER      1: a server (reply time, saturation, the server's CPU)
  WL_COMMAND     1: it times the command given after '--' 
  WL_BAND_POINT, WL_BAND_CALLS  "RELATIVE ABSOLUTE": how far two boots'
                 points and calls a unit may differ (lab compare's bands,
                 measured; default the assumed band)

A file without WL_ABOUT (common.sh, server.sh) is no workload.  This
module reads the declarations for the host (the plan, the analysis,
compare, deps); the guest's sweep reads the same lines itself."""
import dataclasses
import functools
import os
import pathlib
import re

HERE = pathlib.Path(__file__).resolve().parent
KEYS = ("WL_ABOUT", "WL_LOOPS", "WL_REPEATS", "WL_REPEATS_VIRTUAL", "WL_STAGE", "WL_COST_SLOPE",
        "WL_POINT_SECONDS",
        "WL_IN_ALL", "WL_PACKAGES", "WL_MEASURE", "WL_SERVER", "WL_COMMAND", "WL_BAND_POINT",
        "WL_BAND_CALLS")
LINE = re.compile(r'^(WL_[A-Z_]+)=(?:"([^"$`\\]*)"|([^\s"$`\\\'#;]*))\s*(?:#.*)?$')
# The measures every server has, in the order the analysis reports them.
SERVER_MEASURES = {
    "reply": (1, "1/s (1/reply time)", "reply"),
    "saturation": (1, "requests/s", "request"),
    "server": (1, "requests/s (the server's CPU)", "request"),
}


@dataclasses.dataclass(frozen=True)
class Workload:
    name: str
    path: pathlib.Path
    about: str
    loops: str
    repeats: int
    repeats_virtual: int
    stage: str
    cost_slope: float
    point_seconds: float
    in_all: bool
    server: bool
    command: bool
    packages: tuple
    measures: dict
    bands: dict


def folders():
    """Where workloads are declared: workloads/lib/, then LAB_WORKLOADS_DIR's."""
    extra = [pathlib.Path(p) for p in os.environ.get("LAB_WORKLOADS_DIR", "").split(":") if p]
    return [HERE / "lib", *extra]


def declaration(path):
    """{NAME: VALUE} of @path's declaration (the KEYS' lines); ValueError
    naming a line that assigns one of them anything but a plain value."""
    found = {}
    for i, line in enumerate(pathlib.Path(path).read_text().splitlines(), 1):
        if line.partition("=")[0] not in KEYS:
            continue
        m = LINE.match(line)
        if not m:
            raise ValueError(f"{path}:{i}: a workload's declaration is NAME=VALUE or "
                             f"NAME=\"VALUE\" with no expansion, not {line!r}")
        found[m.group(1)] = m.group(2) if m.group(2) is not None else m.group(3)
    return found


def _band(path, text):
    try:
        rel, absolute = (float(x) for x in text.split())
    except ValueError:
        raise ValueError(f"{path}: a band is 'RELATIVE ABSOLUTE', not {text!r}") from None
    return (rel, absolute, "measured")


def read(path):
    """The Workload @path declares, or None if it declares none."""
    path = pathlib.Path(path)
    d = declaration(path)
    if "WL_ABOUT" not in d:
        return None
    for key in ("WL_LOOPS", "WL_REPEATS", "WL_STAGE"):
        if not d.get(key):
            raise ValueError(f"{path}: a workload declares {key}")
    if d["WL_STAGE"] not in ("host", "guest"):
        raise ValueError(f"{path}: WL_STAGE is host or guest, not {d['WL_STAGE']!r}")
    server = d.get("WL_SERVER") == "1"
    if server:
        measures = dict(SERVER_MEASURES)
    else:
        words = d.get("WL_MEASURE", "").split()
        if len(words) != 4:
            raise ValueError(f"{path}: WL_MEASURE is 'NAME FACTOR UNIT WORD', "
                             f"not {d.get('WL_MEASURE')!r}")
        measures = {words[0]: (float(words[1]), words[2], words[3])}
    bands = {f"sweep.{k}": _band(path, d[f"WL_BAND_{k.upper()}"])
             for k in ("point", "calls") if d.get(f"WL_BAND_{k.upper()}")}
    repeats = int(d["WL_REPEATS"])
    return Workload(name=path.stem, path=path, about=d["WL_ABOUT"], loops=d["WL_LOOPS"],
                    repeats=repeats, repeats_virtual=int(d.get("WL_REPEATS_VIRTUAL") or repeats),
                    stage=d["WL_STAGE"], cost_slope=float(d.get("WL_COST_SLOPE") or 1),
                    point_seconds=float(d.get("WL_POINT_SECONDS") or 60),
                    in_all=d.get("WL_IN_ALL") == "1", server=server,
                    command=d.get("WL_COMMAND") == "1",
                    packages=tuple(d.get("WL_PACKAGES", "").split()), measures=measures,
                    bands=bands)


def point_costs(values, slope=1.0):
    """The cost of each point of @values, relative to an undelayed one: 1 +
    slope x value / the largest value (a sweep's run time grows with its
    delay, about as 1 + value / d-half, and the default ranges end near
    d-half; Apache's points get cheaper, a spin emulating faster than its
    own code).  The one cost model: lablib.sweep.parts deals parts by it,
    and a workload's seconds() is it times its point_seconds."""
    top = max(values)
    return [1 + (slope * v / top if top > 0 else 0) for v in values]


def seconds(w, values, repeats=1):
    """About how long @w's sweep of @values takes on the virtual clock, in
    the host's seconds, @repeats runs a point."""
    return w.point_seconds * repeats * sum(point_costs(values, w.cost_slope))


def workloads():
    """{name: Workload} of every folder, by name; a name declared twice is
    the first folder's.  Read once for each set of folders."""
    return _workloads(tuple(folders()))


@functools.lru_cache(maxsize=None)
def _workloads(folders):
    found = {}
    for folder in folders:
        for path in sorted(pathlib.Path(folder).glob("*.sh")):
            w = read(path)
            if w is not None:
                found.setdefault(w.name, w)
    return dict(sorted(found.items()))


def names():
    return list(workloads())


def measures():
    """{measure: (factor, unit, word)} of every workload, the servers' last."""
    out = {}
    for w in workloads().values():
        if not w.server:
            out.update(w.measures)
    return {**out, **SERVER_MEASURES}

