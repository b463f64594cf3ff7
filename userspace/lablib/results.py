"""Result folders as docs/reference.md ("Conventions") describes them, on the
host's side: read meta.json and CSV files with a header, and write the
analysis' files (summaries, reports) whole or not at all.  Result folders
themselves and their meta.json are made by liblab alone: by the C tools,
and by 'lab begin', 'lab meta' and 'lab commit' (userspace/lib/lab) for
scripts in any language."""
import contextlib
import csv
import json
import os
import pathlib
import subprocess


# liblab's command for result folders: LAB_TOOL's (the shell scripts' name
# for it), else the one of the lab this lablib belongs to.
LAB = pathlib.Path(os.environ.get("LAB_TOOL")
                   or pathlib.Path(__file__).resolve().parents[1] / "lib/lab")


def lab(*args):
    """Run 'lab ARGS...' (begin, meta, commit: userspace/lib/lab); its output,
    one line.  ValueError if it is not built or it fails."""
    if not LAB.is_file():
        raise ValueError("userspace/lib/lab is not built; run 'make userspace'")
    out = subprocess.run([str(LAB), *map(str, args)], capture_output=True, text=True)
    if out.returncode != 0:
        raise ValueError(out.stderr.strip() or f"lab {args[0]}: exit status {out.returncode}")
    return out.stdout.strip()


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


def write_summary(folder, summary, columns, rows, report):
    """An analyser's three files in @folder: summary.json (@summary),
    summary.csv (@rows under @columns, as write_csv) and report.txt
    (@report).  Returns their names, for cli.show()."""
    folder = pathlib.Path(folder)
    write_json(folder / "summary.json", summary)
    write_csv(folder / "summary.csv", columns, rows)
    write_text(folder / "report.txt", report)
    return ["summary.json", "summary.csv", "report.txt"]


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


def get(d, *path):
    """d[path[0]][path[1]]... of a summary read from JSON, None where a step
    is missing or is not an object."""
    for p in path:
        if not isinstance(d, dict) or p not in d:
            return None
        d = d[p]
    return d


def settings(meta):
    """The tool's settings of @meta ({} if none)."""
    return meta.get("settings") or {}


def on_virtual_clock(meta):
    """Did the run of @meta measure on QEMU's virtual clock (machine.clock.kind)?
    False for the host's clock and for a meta.json that names none."""
    return ((meta.get("machine") or {}).get("clock") or {}).get("kind") == "virtual"


def describe(meta):
    """One line on the kernel and machine of @meta, e.g. "kernel
    6.12.117-lab (stock, voluntary), 2 CPUs, accelerator tcg (QEMU 10.0.2),
    no PMU", and the CPUs a sweep's work was pinned to (lab sweep --cpus);
    what meta.json lacks is left out."""
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
    work = settings(meta).get("work_cpus")
    if work and work != "any":
        on = f"the work on CPU{'s' if ',' in work or '-' in work else ''} {work}"
        if isinstance(cpus, int):
            parts[-1] += f" ({on})"
        else:
            parts.append(on)
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


def main(argv=None):
    """python -m lablib.results settings DIR KEY...: a line KEY=VALUE for
    each KEY of DIR/meta.json's settings that it has, in the order asked
    (a script carrying on a run with the run's own settings)."""
    import argparse
    p = argparse.ArgumentParser(prog="python -m lablib.results", description=main.__doc__)
    sub = p.add_subparsers(dest="what", required=True)
    s = sub.add_parser("settings", help="settings of a result folder's meta.json")
    s.add_argument("dir", help="a result folder")
    s.add_argument("keys", nargs="+", metavar="KEY")
    args = p.parse_args(argv)
    try:
        settings = read_meta(args.dir).get("settings", {})
    except (ValueError, OSError) as e:
        p.exit(2, f"{p.prog}: {e}\n")
    for key in args.keys:
        value = settings.get(key)
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            if "\n" in str(value):
                p.exit(2, f"{p.prog}: {args.dir}/meta.json: settings.{key} holds a newline\n")
            print(f"{key}={value}")


if __name__ == "__main__":
    main()
