"""lab: the lab's one command.  'lab' alone lists the subcommands; 'lab
NAME --help' says what one does, its options and an example.

Each experiment registers one row, LAB_COMMAND in its folder's package
(userspace/tax/__init__.py is lablib.tax's), and the lab's own commands
are OWN below; the dispatcher only dispatches.  A row either runs the
experiment's runner (the shell program in its folder that boots the lab's
VM, or with --here measures the running kernel, then analyses) or calls a
Python subcommand's main(argv, prog).  'lab analyse FOLDER' picks the analyser of
a result folder by the experiment its meta.json names."""
import dataclasses
import importlib
import importlib.util
import os
import pathlib
import sys

from . import cli, figures, results

# The lab's checkout: lablib is installed from it, editable (make venv).
ROOT = pathlib.Path(__file__).resolve().parents[2]


@dataclasses.dataclass(frozen=True)
class Command:
    """One row.  @runner: the experiment's runner, under ROOT; @main: a
    Python subcommand, "module:function"; @analysers: for each kind of
    folder it makes (meta.json's "experiment"), the module whose main()
    analyses it."""
    name: str
    summary: str
    runner: str = None
    main: str = None
    analysers: dict = dataclasses.field(default_factory=dict)


# The lab's own commands; each experiment's row is in its package
# (LAB_COMMAND in its folder's __init__.py: userspace/tax/ is lablib.tax).
OWN = (
    Command("analyse", "analyse a result folder (the analyser its meta.json's experiment names)",
            main="lablib.lab:analyse"),
    Command("compare", "two runs or sets of runs of one experiment, a verdict a figure",
            main="lablib.compare:main"),
    Command("ab", "an experiment N times a side in random order, then compare",
            main="lablib.ab:main"),
    Command("report", "one HTML page of every result folder and comparison",
            main="lablib.report:main"),
)


def experiments():
    """Each experiment's row: its folder's package's LAB_COMMAND, a runner
    named relative to its folder; by name."""
    rows = []
    for init in sorted([*ROOT.glob("userspace/*/__init__.py"), ROOT / "workloads/__init__.py"]):
        folder = init.parent
        package = "sweep" if folder.name == "workloads" else folder.name
        try:
            row = dict(getattr(importlib.import_module(f"lablib.{package}"), "LAB_COMMAND"))
        except (ImportError, AttributeError):
            continue
        if row.get("runner"):
            row["runner"] = str((folder / row["runner"]).relative_to(ROOT))
        rows.append(Command(**row))
    return sorted(rows, key=lambda c: c.name)


def present(c):
    """Whether @c's experiment is in this checkout: a lab without an
    experiment's folder does not offer it."""
    if c.runner:
        return (ROOT / c.runner).is_file()
    try:
        return importlib.util.find_spec(c.main.partition(":")[0]) is not None
    except ImportError:
        return False


COMMANDS = tuple(c for c in (*experiments(), *OWN) if present(c))
BY_NAME = {c.name: c for c in COMMANDS}


def usage():
    width = max(len(c.name) for c in COMMANDS)
    rows = "\n".join(f"  {c.name:<{width}}  {c.summary}" for c in COMMANDS)
    return ("usage: lab COMMAND [ARG...]\n\nThe kernel-measurement lab's experiments, "
            "analysers and reports.\n\n"
            f"Commands:\n{rows}\n\n'lab COMMAND --help' says more.  Example:\n"
            f"  lab sweep grep -l 0:20000:4000\n")


def call(target, argv, prog):
    """Import "module:function" and return its exit status for @argv."""
    module, _, function = target.partition(":")
    return getattr(importlib.import_module(module), function or "main")(argv, prog=prog)


def analyser_of(folder):
    """The analyser module of result folder @folder, from its meta.json."""
    meta = results.read_meta(folder)
    exp = meta.get("experiment")
    if figures.is_sweep(meta):
        return "lablib.sweep.analyse"
    for c in COMMANDS:
        if exp in c.analysers:
            return c.analysers[exp]
    known = sorted(e for c in COMMANDS for e in c.analysers)
    raise cli.BadInput(f"{folder}: experiment {exp!r} has no analyser "
                       f"(one of {', '.join(known)} or a workload sweep)")


def analyse(argv=None, prog="lab analyse"):
    """lab analyse FOLDER [ANALYSER-OPTIONS...]."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        out = sys.stdout if argv else sys.stderr
        print(f"usage: {prog} FOLDER [OPTIONS...]\n\nAnalyse a result folder with the "
              f"analyser of the experiment its meta.json names; OPTIONS are that\n"
              f"analyser's ('{prog} FOLDER --help' lists them).\n\nExample:\n"
              f"  {prog} results/latest-grep", file=out)
        return 0 if argv else 2
    try:
        module = analyser_of(pathlib.Path(argv[0]))
    except (OSError, ValueError, cli.BadInput) as e:
        print(f"{prog}: error: {cli.message(e)}", file=sys.stderr)
        return 1
    return call(f"{module}:main", argv, prog)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        (sys.stdout if argv else sys.stderr).write(usage())
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    c = BY_NAME.get(name)
    if c is None:
        print(f"lab: error: no command {name!r}; one of {', '.join(BY_NAME)}",
              file=sys.stderr)
        return 2
    if c.runner:
        runner = ROOT / c.runner
        sys.stdout.flush()
        os.execv(runner, [str(runner), *rest])
    return call(c.main, rest, f"lab {name}")


if __name__ == "__main__":
    sys.exit(main())
