"""The command-line conventions of the lab's analysers.  --help prints the
usage and an example and exits 0; a wrong argument count prints the usage
on stderr and exits 2; an expected bad input (OSError, ValueError,
BadInput) is one line "PROG: error: MESSAGE" on stderr and exit 1.  Other
exceptions are bugs and keep their traceback."""
import argparse
import json
import pathlib
import sys


class BadInput(Exception):
    """An input the analyser cannot use, said in one line."""


def default_prog(argv0=None):
    """How the running program was started: "python -m MODULE" for a module
    of the package run with -m, else FOLDER/SCRIPT, e.g. "toy/analyse.py"."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    if argv0 is None and spec is not None and spec.name.startswith("lablib."):
        return f"python -m {spec.name}"
    p = pathlib.Path(argv0 or sys.argv[0])
    return f"{p.parent.name}/{p.name}" if p.parent.name else p.name


def message(e):
    """@e as one line."""
    if isinstance(e, OSError) and e.filename is not None and e.strerror:
        text = f"{e.filename}: {e.strerror}"
    else:
        text = str(e) or type(e).__name__
    return "; ".join(line.strip() for line in text.splitlines() if line.strip())


def parser(description, example, prog=None):
    """An ArgumentParser whose --help ends with "Example: EXAMPLE"."""
    return argparse.ArgumentParser(
        prog=prog or default_prog(), description=description,
        epilog=f"Example:\n  {example}", formatter_class=argparse.RawDescriptionHelpFormatter)


def add_json_option(p):
    """--json: print the summary as JSON instead of the table."""
    p.add_argument("--json", action="store_true",
                   help="print the summary as JSON on stdout instead of the table")


def add_result_args(p, metavar, what, picture=None):
    """The arguments every analyser takes: the result folder (@metavar,
    described as @what), --no-plot if it draws @picture, and --json."""
    p.add_argument("dir", metavar=metavar, help=what)
    if picture:
        p.add_argument("--no-plot", action="store_true", help=f"do not draw {picture}")
    add_json_option(p)


def show(args, summary, text, folder, files, picture=None):
    """An analyser's output: the summary as JSON with --json, else the
    table @text and which @files (and @picture, unless --no-plot) it
    wrote into @folder."""
    if getattr(args, "json", False):
        print_json(summary)
        return
    print(text, end="")
    if picture and not getattr(args, "no_plot", False):
        files = [*files, picture]
    print(f"results: {folder}/{', '.join(files)}")


def folder_analyser(metavar, what, analyse, plot=None, picture=None, pictures=None):
    """add_args and work, for main(), of an analyser of one result folder.
    add_args: the folder (@metavar, described as @what), --json, and
    --no-plot if there is @plot, which draws @pictures (for --help; by
    default @picture).  work(args): analyse(folder) reads the folder,
    writes its files there and returns (summary, text, files); unless
    --no-plot, plot(summary, folder) draws @picture and returns the names
    of any other files it wrote; show() prints it all."""
    def add_args(p):
        add_result_args(p, metavar, what, picture=(pictures or picture) if plot else None)

    def work(args):
        folder = pathlib.Path(args.dir)
        summary, text, files = analyse(folder)
        if plot and not args.no_plot:
            files = [*files, *(plot(summary, folder) or [])]
        show(args, summary, text, folder, files, picture=picture if plot else None)
    return add_args, work


def print_json(obj):
    """@obj as indented JSON on stdout."""
    print(json.dumps(obj, indent=1, allow_nan=False))


def command(description, example, add_args, work):
    """main(argv=None, prog=None) of a module whose command is cli.main's
    with these arguments."""
    def run(argv=None, prog=None):
        return main(description, example, add_args, work, argv=argv, prog=prog)
    return run


def main(description, example, add_args, work, argv=None, prog=None):
    """Parse @argv (default sys.argv[1:]) with the arguments @add_args adds
    to the parser, call work(args) and return the exit status."""
    p = parser(description, example, prog)
    add_args(p)
    args = p.parse_args(argv)
    try:
        return work(args) or 0
    except (OSError, ValueError, BadInput) as e:
        print(f"{p.prog}: error: {message(e)}", file=sys.stderr)
        return 1
