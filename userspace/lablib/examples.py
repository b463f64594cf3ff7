"""An experiment's examples (its README's figure and report) made from a
result folder, each saying where it came from:

  python -m lablib.examples FOLDER DEST NAME

copies FOLDER/report.txt to DEST/NAME-report.txt, its first line saying
the lab commit and the date of the run ("Example: ..."), and each PNG of
FOLDER's top level to DEST/NAME.png (one picture) or DEST/NAME-<picture>
(several).  A folder measured from a working tree with changes the commit
does not hold (lab_commit ending in -dirty) is refused: an example is a
commit's own.  Exit status 1 for a folder that cannot make one, 2 for bad
arguments.
"""
import pathlib
import shutil
import sys

from . import cli, results


def provenance(meta, folder):
    """The line that heads an example: its folder, lab commit and date."""
    commit = str(meta.get("lab_commit") or "")
    if not commit or commit.endswith("-dirty"):
        raise cli.BadInput(f"{folder}: measured on lab commit {commit or 'unknown'}; an example "
                           "comes from a run of a committed tree")
    date = str(meta.get("date") or "unknown date")
    return (f"Example: {pathlib.Path(folder).resolve().name}, lab commit {commit[:12]}, measured "
            f"{date[:10]} (remake it with python -m lablib.examples)\n")


def make(folder, dest, name):
    """The example files of @folder in @dest under @name; their paths."""
    folder, dest = pathlib.Path(folder), pathlib.Path(dest)
    meta = results.read_meta(folder)
    report = folder / "report.txt"
    if not report.is_file():
        raise cli.BadInput(f"{folder} has no report.txt: analyse it first")
    head = provenance(meta, folder)
    dest.mkdir(parents=True, exist_ok=True)
    out = [dest / f"{name}-report.txt"]
    results.write_text(out[0], head + report.read_text())
    pictures = sorted(folder.glob("*.png"))
    for p in pictures:
        to = dest / (f"{name}.png" if len(pictures) == 1 else f"{name}-{p.name}")
        shutil.copyfile(p, to)
        out.append(to)
    return out


def main(argv=None):
    p = cli.parser(__doc__.split("\n\n")[0], "python -m lablib.examples "
                   "results/latest-grep workloads/example grep", prog="lablib.examples")
    p.add_argument("folder", help="an analysed result folder")
    p.add_argument("dest", help="the examples' folder, e.g. workloads/example")
    p.add_argument("name", help="the examples' name, e.g. grep")
    args = p.parse_args(argv)
    try:
        for path in make(args.folder, args.dest, args.name):
            print(path)
    except (OSError, ValueError, cli.BadInput) as e:
        print(f"lablib.examples: error: {cli.message(e)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
