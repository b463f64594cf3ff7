"""The READMEs are references: each at most 250 lines, every experiment's
of one shape (how to run it, options, outputs, the headline figure, what it
showed), the history of a method in the NOTES.md beside it; and every
relative link in a README.md or NOTES.md leads to a file that exists."""
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 250
# The headings of an experiment's README, each once, in this order (other
# sections may come between and after them).
SHAPE = ["## Run it", "## Options", "## Outputs", "## Headline figure", "## What it showed"]
# userspace/ folders that are libraries, not experiments.
LIBRARIES = {"lablib", "lib"}
# Folders the walk never enters: the passes beside the host tests make and
# delete files in build/ and results/ while they run (test_lint.py).
SKIP = {".git", ".venv", "build", "results"}


def docs(root, names=("README.md", "NOTES.md")):
    """Every file named one of @names under @root, outside SKIP."""
    found = []
    for top, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP)
        found += [Path(top) / f for f in sorted(files) if f in names]
    return found


def experiment_readmes(root):
    """The README of every experiment: userspace's folders but the
    libraries, and the workload sweeps."""
    found = [p for p in sorted(root.glob("userspace/*/README.md"))
             if p.parent.name not in LIBRARIES]
    return found + [p for p in [root / "workloads/README.md"] if p.exists()]


def too_long(text):
    """The line count of @text if it is over MAX_LINES, else None."""
    n = len(text.splitlines())
    return n if n > MAX_LINES else None


def shape_problems(text):
    """What @text lacks of SHAPE: a heading missing, twice, or out of order."""
    headings = [line.rstrip() for line in text.splitlines() if line.startswith("## ")]
    problems = [f"no '{h}'" for h in SHAPE if h not in headings]
    problems += [f"'{h}' twice" for h in SHAPE if headings.count(h) > 1]
    if not problems:
        order = [h for h in headings if h in SHAPE]
        if order != SHAPE:
            problems.append(f"out of order: {order}")
    return problems


# A markdown link or image: [text](target) or ![alt](target "title").
LINK = re.compile(r"!?\[[^\]]*\]\(\s*([^)\s]+)(?:\s+\"[^\"]*\")?\s*\)")


def links(text):
    """The targets of @text's links, code left out (fenced or indented
    blocks, inline spans)."""
    prose, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and not line.startswith(("    ", "\t")):
            prose.append(line)
    return LINK.findall(re.sub(r"`[^`\n]*`", "", "\n".join(prose)))


def broken_links(path, root):
    """The relative link targets of the file @path that name no file or
    folder.  A link into an experiment that is not there (userspace/NAME or
    modules/NAME gone: deleting an experiment leaves a working lab,
    test_build.py) is not broken: the line naming it is the lab's, not the
    experiment's."""
    broken = []
    for target in links(path.read_text()):
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL, or a heading of this file
        dest = (path.parent / target.split("#")[0]).resolve()
        if dest.exists():
            continue
        rel = dest.relative_to(root) if dest.is_relative_to(root) else None
        if rel and len(rel.parts) > 1 and rel.parts[0] in ("userspace", "modules") \
                and not (root / rel.parts[0] / rel.parts[1]).exists():
            continue
        broken.append(target)
    return broken


def name(path):
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("path", docs(ROOT, ("README.md",)), ids=name)
def test_a_readme_is_at_most_250_lines(path):
    assert too_long(path.read_text()) is None, \
        f"{name(path)}: {too_long(path.read_text())} lines; history goes to NOTES.md beside it"


@pytest.mark.parametrize("path", experiment_readmes(ROOT), ids=name)
def test_an_experiment_readme_has_the_shape(path):
    assert shape_problems(path.read_text()) == [], name(path)


@pytest.mark.parametrize("path", docs(ROOT), ids=name)
def test_every_relative_link_leads_to_a_file(path):
    assert broken_links(path, ROOT) == [], name(path)


def test_the_readme_begins_with_the_two_commands():
    """A newcomer on a fresh Debian machine runs the first command, which
    sets everything up and runs the main job, and the second, the tests."""
    lines = (ROOT / "README.md").read_text().splitlines()
    code = [line.split("#")[0].strip() for line in lines[:6] if line.startswith("    ")]
    assert code[:2] == ["make", "make test"], lines[:6]


def test_there_are_experiments_to_check():
    assert ROOT / "workloads/README.md" in experiment_readmes(ROOT)
    assert len(experiment_readmes(ROOT)) >= 2


# A README as they were before they became references: the model far down,
# the history of its method inline, over 250 lines, a link to a file gone.
OLD = ("# Workload sweeps\n\n    make sweep W=apache\n\n| file | what it is |\n"
       + "**Apache's knee.**  Until 2026-11-29 the knee step's alone ...\n" * 240
       + "[gone](merge.py)\n\n## What it showed on our machine\n\n"
       + "![kbuild sweep](example/kbuild.png)\n" + "a figure\n" * 20)
NEW = ("# Workload sweeps\n\nWhat it measures.  History: [`NOTES.md`](NOTES.md).\n\n"
       "## Run it\n\n    make sweep W=apache   # [not](a-link.md)\n\n## Options\n\n"
       "## Outputs\n\n## Headline figure\n\n![grep](example/grep.png)\n\n"
       "## What it showed\n\n`[code](not-a-link.md)`, [a site](https://example.org)\n\n"
       "## The model\n\n[this file's](#the-model)\n")


@pytest.mark.parametrize("text, long, shape, broken", [
    (OLD, 270, ["no '## Run it'", "no '## Options'", "no '## Outputs'",
                "no '## Headline figure'", "no '## What it showed'"],
     ["merge.py", "example/kbuild.png"]),
    (NEW, None, [], ["NOTES.md", "example/grep.png"]),
    (NEW.replace("## Outputs", "## Files"), None, ["no '## Outputs'"], None),
    (NEW.replace("## Options\n", "").replace("## Headline figure", "## Options\n\n"
                                                                  "## Headline figure"),
     None, ["out of order: ['## Run it', '## Outputs', '## Options', '## Headline figure',"
            " '## What it showed']"], None),
], ids=["old", "new", "renamed", "out-of-order"])
def test_the_checks_catch_an_old_readme(tmp_path, text, long, shape, broken):
    """The checks above on READMEs of the old kind and of the new, in a
    folder of their own where no link but those made here leads anywhere."""
    readme = tmp_path / "workloads" / "README.md"
    readme.parent.mkdir()
    readme.write_text(text)
    assert too_long(text) == long
    assert shape_problems(text) == shape
    if broken is not None:
        assert broken_links(readme, tmp_path) == broken
        (tmp_path / "workloads" / "NOTES.md").write_text("# notes\n")
        (tmp_path / "workloads" / "example").mkdir()
        for target in broken:
            (readme.parent / target).touch()
        assert broken_links(readme, tmp_path) == []


def test_a_link_into_a_deleted_experiment_is_not_broken(tmp_path):
    """What test_build.py's copies without an experiment see: the top
    README still names the folder that is gone."""
    (tmp_path / "userspace" / "kept").mkdir(parents=True)
    (tmp_path / "README.md").write_text("[a](userspace/gone/README.md) "
                                        "[b](userspace/kept/README.md) [c](userspace)\n")
    assert broken_links(tmp_path / "README.md", tmp_path) == ["userspace/kept/README.md"]
