"""Result folders as the lab's format spec describes them: meta.json, CSV
files with a header, files written whole or not at all, and the
NAME.incomplete / rename / latest-EXPERIMENT life cycle of a folder."""
import contextlib
import csv
import datetime
import json
import os
import pathlib
import platform
import re
import subprocess

INCOMPLETE = ".incomplete"
STAMPED = re.compile(r"^(?P<experiment>.+)-\d{8}-\d{6}(?:-\d+)?$")
LAB_ROOT = pathlib.Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def _atomic(path, newline=None):
    """A text file open for writing under a temporary name in the same
    folder, renamed over @path when the block ends without an error."""
    path = pathlib.Path(path)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        with open(tmp, "w", encoding="utf-8", newline=newline) as f:
            yield f
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def write_text(path, text):
    """Write @text to @path atomically."""
    with _atomic(path) as f:
        f.write(text)


def write_json(path, obj):
    """Write @obj as JSON (indented, no NaN) to @path atomically."""
    text = json.dumps(obj, indent=1, allow_nan=False) + "\n"
    write_text(path, text)


def write_csv(path, columns, rows):
    """Write dict @rows as CSV with header @columns to @path atomically;
    keys not in @columns are left out, None is written as an empty field."""
    with _atomic(path, newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(columns), extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def read_json(path):
    """The JSON value in @path; ValueError naming the file if it is not JSON."""
    with open(path, encoding="utf-8") as f:
        try:
            return json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not JSON ({e})") from None


def read_csv(path, columns=()):
    """The rows of CSV file @path as dicts of strings.  ValueError naming
    the file if it has no header, lacks one of @columns, or a row has more
    or fewer fields than the header."""
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        if not reader.fieldnames:
            raise ValueError(f"{path}: empty file, no header")
        missing = [c for c in columns if c not in reader.fieldnames]
        if missing:
            raise ValueError(f"{path}: no column {', '.join(missing)} in the header")
        rows = []
        for row in reader:
            if None in row or None in row.values():
                raise ValueError(f"{path} line {reader.line_num}: not "
                                 f"{len(reader.fieldnames)} fields as in the header")
            rows.append(row)
    return rows


def read_meta(folder):
    """meta.json of result folder @folder, a dict; ValueError if missing."""
    path = pathlib.Path(folder) / "meta.json"
    if not path.is_file():
        raise ValueError(f"{folder} has no meta.json: not a lab result folder")
    meta = read_json(path)
    if not isinstance(meta, dict):
        raise ValueError(f"{path}: not a JSON object")
    if not isinstance(meta.get("settings", {}), dict):
        raise ValueError(f"{path}: settings is not a JSON object")
    return meta


def settings(meta):
    """The tool's settings of @meta ({} if none)."""
    return meta.get("settings") or {}


def describe(meta):
    """One line on the kernel and machine of @meta, e.g. "kernel
    6.12.117-lab (stock, voluntary), 2 CPUs, accelerator tcg (QEMU 10.0.2),
    no PMU"; what meta.json lacks is left out."""
    kernel = meta.get("kernel") or {}
    machine = meta.get("machine") or {}
    text = f"kernel {kernel.get('release') or '?'}"
    how = [kernel[k] for k in ("variant", "preemption") if kernel.get(k)]
    if how:
        text += f" ({', '.join(how)})"
    parts = [text]
    cpus = machine.get("cpus")
    if isinstance(cpus, int):
        parts.append(f"{cpus} CPU{'s' if cpus != 1 else ''}")
    if machine.get("accelerator"):
        acc = f"accelerator {machine['accelerator']}"
        if machine.get("qemu"):
            acc += f" (QEMU {machine['qemu']})"
        parts.append(acc)
    if isinstance(machine.get("pmu"), bool):
        parts.append("PMU" if machine["pmu"] else "no PMU")
    clock = machine.get("clock") or {}
    if clock.get("kind") == "virtual":
        parts.append(f"virtual clock (icount shift={clock.get('shift', '?')})")
    elif clock.get("kind"):
        parts.append(f"{clock['kind']} clock")
    return ", ".join(parts)


def new_result_dir(parent, experiment, name=None, now=None):
    """Create and return PARENT/NAME.incomplete, NAME being
    EXPERIMENT-YYYYmmdd-HHMMSS (local time @now, default now) or @name;
    -2, -3 ... appended while NAME or NAME.incomplete exists."""
    if name is not None and (not name or "/" in name):
        raise ValueError(f"bad result folder name {name!r}")
    parent = pathlib.Path(parent)
    parent.mkdir(parents=True, exist_ok=True)
    if name is None:
        now = now or datetime.datetime.now()
        name = f"{experiment}-{now:%Y%m%d-%H%M%S}"
    for i in range(1, 1000):
        base = name if i == 1 else f"{name}-{i}"
        final = parent / base
        if final.exists() or final.is_symlink() or (parent / (base + INCOMPLETE)).exists():
            continue
        try:
            (parent / (base + INCOMPLETE)).mkdir()
        except FileExistsError:
            continue
        return parent / (base + INCOMPLETE)
    raise FileExistsError(f"{parent}/{name}: 999 folders of that name exist")


def commit_result_dir(path):
    """Rename PARENT/NAME.incomplete to PARENT/NAME and return the new path;
    for a time-stamped NAME (EXPERIMENT-YYYYmmdd-HHMMSS[-N]) point the link
    PARENT/latest-EXPERIMENT at it (relative, replaced atomically)."""
    path = pathlib.Path(path)
    if not path.name.endswith(INCOMPLETE):
        raise ValueError(f"{path}: not an {INCOMPLETE} result folder")
    final = path.with_name(path.name[:-len(INCOMPLETE)])
    os.rename(path, final)
    m = STAMPED.match(final.name)
    if m:
        link = final.parent / f"latest-{m['experiment']}"
        tmp = link.with_name(f".{link.name}.tmp{os.getpid()}")
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        tmp.symlink_to(final.name)
        os.replace(tmp, link)
    return final


def _cpuinfo(key):
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                k, sep, value = line.partition(":")
                if sep and k.strip() == key:
                    return value.strip()
    except OSError:
        pass
    return None


def _git_commit():
    try:
        out = subprocess.run(["git", "-C", str(LAB_ROOT), "rev-parse", "HEAD"],
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    commit = out.stdout.strip()
    return commit if out.returncode == 0 and len(commit) == 40 else None


def _variant(release):
    """stock for X-lab, V for X-lab-V, else None (as lab_meta_write)."""
    _, sep, rest = release.partition("-lab")
    if not sep:
        return None
    if rest == "":
        return "stock"
    return rest[1:] if rest.startswith("-") else None


def _preemption(version):
    if "PREEMPT_RT" in version:
        return "rt"
    with contextlib.suppress(OSError):
        m = re.search(r"\((\w+)\)", pathlib.Path("/sys/kernel/debug/sched/preempt").read_text())
        if m:
            return m[1]
    if "PREEMPT_DYNAMIC" in version:
        return "dynamic (debugfs not mounted: mode unknown)"
    if "PREEMPT " in version:
        return "full"
    return "none or voluntary"


def write_meta(folder, experiment, argv, settings):
    """Write FOLDER/meta.json for a folder made on the host: the command
    line @argv, the tool's @settings and what this machine is."""
    release, version = platform.release(), platform.version()
    virtual = "hypervisor" in (_cpuinfo("flags") or "").split()
    meta = {
        "experiment": experiment,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": [str(a) for a in argv],
        "lab_commit": _git_commit(),
        "kernel": {"release": release, "version": version, "variant": _variant(release),
                   "preemption": _preemption(version)},
        "machine": {"cpu_model": _cpuinfo("model name"), "cpus": os.cpu_count(),
                    "virtual": virtual, "accelerator": "unknown" if virtual else "none",
                    "accelerator_why": None, "qemu": None,
                    "pmu": os.path.exists("/sys/bus/event_source/devices/cpu")},
        "modules": {},
        "settings": dict(settings or {}),
    }
    write_json(pathlib.Path(folder) / "meta.json", meta)
    return meta
