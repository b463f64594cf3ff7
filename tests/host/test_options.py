"""Every long option a README or reference names beside one of the lab's
commands is one that command's --help lists: a README never documents an
option its parser does not take."""
import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT

# The lab's commands as a README writes them: 'lab NAME', a runner or tool
# by its path under the checkout.
COMMAND = re.compile(r"(?:\./)?(?:\.venv/bin/)?(lab [a-z]+|(?:userspace|workloads|scripts)/"
                     r"[a-z0-9_/]+(?:\.sh)?)(.*)")
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def documents():
    return sorted([*ROOT.glob("**/README.md"), *ROOT.glob("docs/*.md")])


def command_lines(text):
    """The code of @text: backtick spans and lines indented four spaces."""
    yield from re.findall(r"`([^`\n]+)`", text)
    yield from (line[4:] for line in text.splitlines() if line.startswith("    "))


def named_options(path):
    """{(command, option)} that @path names: the long options after a
    command, up to '--' (the rest is another program's), a comment or
    the end of the shell command."""
    found = set()
    for code in command_lines(path.read_text()):
        m = COMMAND.match(code.strip())
        if not m:
            continue
        cmd, rest = m.groups()
        rest = re.split(r" -- | --$|\s#|[|;&>]", rest)[0]
        found |= {(cmd, o) for o in OPTION.findall(rest)}
    return found


def runnable(cmd):
    if cmd.startswith("lab "):
        return True
    p = ROOT / cmd
    return p.is_file() and os.access(p, os.X_OK)


HELP = {}


def help_text(cmd):
    if cmd not in HELP:
        argv = ([sys.executable, "-m", "lablib.lab", cmd.split()[1]] if cmd.startswith("lab ")
                else [ROOT / cmd])
        out = subprocess.run([*argv, "--help"], capture_output=True, text=True, timeout=60,
                             cwd=ROOT)
        HELP[cmd] = out.stdout + out.stderr
    return HELP[cmd]


def listed(option, text):
    return re.search(re.escape(option) + r"(?![a-z0-9-])", text) is not None


CASES = sorted((str(p.relative_to(ROOT)), c, o) for p in documents() for c, o in named_options(p)
               if runnable(c))


def test_there_are_options_to_check():
    assert len(CASES) > 5 and len(TABLED) > 20
    assert "lab sweep" in {c for _, c, _ in CASES}
    assert "workloads" in {f for f, _ in TABLED}


@pytest.mark.parametrize("doc,cmd,option", CASES, ids=["-".join(c) for c in CASES])
def test_a_named_option_is_in_the_commands_help(doc, cmd, option):
    assert listed(option, help_text(cmd)), \
        f"{doc} names '{cmd} {option}'; its --help has no {option}"


# --- an experiment README's tables of options -------------------------------------------

PACKAGES = {"workloads": "lablib.sweep"}


def tabled_options(path):
    """The long options in the first column of @path's tables."""
    cells = [line.split("|")[1] for line in path.read_text().splitlines()
             if line.startswith("| ") and line.count("|") > 2]
    return {o for cell in cells for o in OPTION.findall(cell)}


def folder_help(folder):
    """The --help of every program of @folder: its executables and scripts,
    and its Python modules."""
    key = f"folder:{folder}"
    if key not in HELP:
        texts = []
        d = ROOT / folder
        for p in sorted(d.iterdir()):
            if p.is_file() and os.access(p, os.X_OK) and p.suffix in ("", ".sh"):
                texts.append(help_text(str(p.relative_to(ROOT))))
            elif p.suffix == ".py" and p.stem != "__init__":
                pkg = PACKAGES.get(folder, "lablib." + d.name)
                out = subprocess.run([sys.executable, "-m", f"{pkg}.{p.stem}", "--help"],
                                     capture_output=True, text=True, timeout=60, cwd=ROOT)
                texts.append(out.stdout)
        HELP[key] = "\n".join(texts)
    return HELP[key]


def experiment_readmes():
    return [p for p in [*sorted(ROOT.glob("userspace/*/README.md")), ROOT / "workloads/README.md"]
            if p.parent.name not in ("lib", "lablib", "compare")]


TABLED = sorted((str(p.parent.relative_to(ROOT)), o) for p in experiment_readmes()
                for o in tabled_options(p))


@pytest.mark.parametrize("folder,option", TABLED, ids=["-".join(c) for c in TABLED])
def test_a_tabled_option_is_a_programs_of_its_folder(folder, option):
    assert listed(option, folder_help(folder)), \
        f"{folder}/README.md tables {option}; no program of {folder} lists it in --help"


def test_the_check_catches_an_option_that_is_not_there(tmp_path):
    """An option the README names and the parser lacks (the one a user
    tripped over: 'sweep.sh cmd --in-memory') is found."""
    readme = tmp_path / "README.md"
    readme.write_text("Run `workloads/sweep.sh cmd --in-memory -- ls` or\n\n"
                      "    lab sweep grep --ns 0,100   # --here is not checked after '#'\n")
    named = named_options(readme)
    assert named == {("workloads/sweep.sh", "--in-memory"), ("lab sweep", "--ns")}
    assert not listed("--in-memory", help_text("workloads/sweep.sh"))
    assert listed("--ns", help_text("lab sweep"))
    readme.write_text("| option | what |\n| --- | --- |\n| `--here` | the running kernel |\n"
                      "| `-l, --loops LIST` | loop counts |\n")
    assert tabled_options(readme) == {"--here", "--loops"}
    assert listed("--loops", folder_help("workloads"))
    assert not listed("--in-memory", folder_help("workloads"))
