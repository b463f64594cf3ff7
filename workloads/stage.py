"""Copy what a workload touches into a root of its own (workloads/sweep.sh).

  python -m lablib.sweep.stage DEST --log STRACE_LOG... [--tree DIR]... [--path PATH]...
           [--program PATH]... [--output FILE] [--key KEY] [--json FILE]

In the VM the root file system is the host's, over 9p, and a timed
window that reads from it waits for the host.  sweep.sh runs the workload
once under strace (lablib.readers.strace reads the log), and this copies into
DEST, a tmpfs, at the same paths:

- every file, directory and symbolic link a call that succeeded named or
  returned (each link of a path as a link, and what it points to);
- each program the workload executed, with what the kernel reads to start
  it (a script's interpreter, the dynamic loader) and the libraries ldd
  names; and each --program so (what enters DEST: chroot, env);
- each --tree whole (a tree the workload writes: kbuild's objects), and
  each --path as what it is (a folder alone: the command's own);
- of a directory the workload listed (make reads every folder it looks
  in), the entries it did not touch by name, type and time only: an empty
  file, an empty folder, a link; the workload read no more of them.

Files keep their modes and times, so that make sees the same tree.  /proc,
/sys, /dev and DEST itself are not copied: sweep.sh mounts them.  Prints
one line and, with --json, writes what was staged (files, bytes,
directories, links, placeholders, seconds) for meta.json, with the
Debian packages (name and version) of the programs and libraries staged
to run ("packages": what a build's instructions depend on), the
addresses off this machine the workload connected to ("network"), the
digest of the recorded run's --output ("output_sha256") and --key (what
was staged: sweep.sh refuses an archive staged for another command).
"""
import argparse
import hashlib
import json
import os
import pathlib
import re
import shutil
import stat
import subprocess
import sys
import time

from lablib.readers import strace

NOT_COPIED = ("/proc", "/sys", "/dev")
MAX_LINKS = 40                  # links followed in one path, as the kernel's limit


class Stage:
    def __init__(self, dest):
        self.dest = os.path.abspath(dest)
        self.files = self.bytes = self.links = self.placeholders = 0
        self.dirs = {}            # staged directory -> its source, times set last
        self.done = set()
        self.run = set()          # the programs and libraries staged to run

    def excluded(self, path):
        return any(path == p or path.startswith(p + "/")
                   for p in NOT_COPIED + (self.dest,))

    def target(self, path):
        return self.dest + path

    def path(self, path, depth=0):
        """Stage @path: each of its components as what it is."""
        path = os.path.normpath(path)
        if path in self.done or self.excluded(path) or depth > MAX_LINKS:
            return
        parts = pathlib.PurePosixPath(path).parts[1:]
        cur = "/"
        for i, name in enumerate(parts):
            nxt = os.path.join(cur, name)
            try:
                st = os.lstat(nxt)
            except OSError:
                return                   # gone since (a temporary file): nothing to copy
            if stat.S_ISLNK(st.st_mode):
                self.link(nxt)
                rest = os.path.join(os.path.dirname(nxt), os.readlink(nxt), *parts[i + 1:])
                self.path(rest, depth + 1)
                break
            if stat.S_ISDIR(st.st_mode):
                self.directory(nxt)
            elif i == len(parts) - 1:
                self.file(nxt, st)
            cur = nxt
        self.done.add(path)

    def link(self, path):
        t = self.target(path)
        if not os.path.lexists(t):
            self.directory(os.path.dirname(path))
            os.symlink(os.readlink(path), t)
            self.links += 1

    def directory(self, path):
        if path in self.dirs or self.excluded(path):
            return
        os.makedirs(self.target(path), exist_ok=True)
        self.dirs[path] = path

    def file(self, path, st):
        if not stat.S_ISREG(st.st_mode):
            return                       # sockets, fifos, devices: not a workload's data
        t = self.target(path)
        if os.path.lexists(t):
            return
        shutil.copy2(path, t, follow_symlinks=False)
        self.files += 1
        self.bytes += st.st_size

    def entry(self, path, whole=True):
        """Directory entry @path as what it is: a link, a folder, or a file,
        copied (@whole) or, if not staged yet, a placeholder: empty, with
        its mode and times (see the module's doc)."""
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            self.link(path)
        elif stat.S_ISDIR(st.st_mode):
            self.directory(path)
        elif whole:
            self.file(path, st)
        elif stat.S_ISREG(st.st_mode) and not os.path.lexists(self.target(path)):
            t = self.target(path)
            open(t, "x").close()
            os.chmod(t, stat.S_IMODE(st.st_mode))
            os.utime(t, ns=(st.st_atime_ns, st.st_mtime_ns))
            self.placeholders += 1

    def listing(self, path):
        """Every entry of directory @path, so that a listing of it reads the
        same: those not staged yet as placeholders."""
        try:
            names = os.listdir(path)
        except OSError:
            return
        self.path(path)
        for name in names:
            self.entry(os.path.join(path, name), whole=False)

    def tree(self, path):
        self.path(path)
        for top, dirnames, filenames in os.walk(path):
            for name in dirnames + filenames:
                self.entry(os.path.join(top, name))

    def program(self, path, depth=0):
        """@path and what the kernel and the loader read to run it: a
        script's interpreter (#!), or what ldd names (the loader too)."""
        self.path(path)
        self.run.add(os.path.realpath(path))
        try:
            with open(path, "rb") as f:
                head = f.readline(256)
        except OSError:
            return
        if head.startswith(b"#!"):
            words = head[2:].split()
            if words and depth < 4:
                self.program(os.fsdecode(words[0]), depth + 1)
            return
        out = subprocess.run(["ldd", path], capture_output=True, text=True).stdout
        for line in out.splitlines():
            words = line.split()
            if "=>" in words and len(words) > 2 and words[2].startswith("/"):
                lib = words[2]
            elif words and words[0].startswith("/"):
                lib = words[0]
            else:
                continue
            self.path(lib)
            self.run.add(os.path.realpath(lib))

    def finish(self):
        """The staged directories' modes and times: their copies' were
        changed by what was copied into them."""
        for path in sorted(self.dirs, key=len, reverse=True):
            st = os.stat(path)
            t = self.target(path)
            os.chmod(t, stat.S_IMODE(st.st_mode))
            os.utime(t, ns=(st.st_atime_ns, st.st_mtime_ns))


def packages(paths):
    """The Debian packages that own @paths, {name: version}, from
    dpkg-query; {} without dpkg.  A path is looked up as it is and, for
    /usr/bin, /usr/sbin and /usr/lib*, without /usr: dpkg's database keeps
    the paths the packages shipped, and usrmerge made /lib a link."""
    if not paths or not shutil.which("dpkg-query"):
        return {}
    names = set()
    for path in sorted(paths):
        names.add(path)
        m = re.match(r"/usr(/(?:s?bin|lib[^/]*)/.*)", path)
        if m:
            names.add(m.group(1))
    owners = subprocess.run(["dpkg-query", "-S", *sorted(names)], capture_output=True,
                            text=True).stdout
    found = set()
    for line in owners.splitlines():
        owner, sep, _ = line.partition(": /")
        if sep and not owner.startswith("diversion by"):
            found.update(name.strip().split(":")[0] for name in owner.split(","))
    if not found:
        return {}
    shown = subprocess.run(["dpkg-query", "-W", "-f", "${Package}\t${Version}\n",
                            *sorted(found)], capture_output=True, text=True).stdout
    return dict(sorted(line.split("\t", 1) for line in shown.splitlines() if "\t" in line))


def main(argv=None, prog=None):
    """Stage as @argv (default sys.argv[1:]) says; the exit status."""
    p = argparse.ArgumentParser(prog=prog or "python -m lablib.sweep.stage",
                                description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dest", help="the root to copy into (an empty tmpfs)")
    p.add_argument("--log", action="append", default=[], help="an strace -f -y log")
    p.add_argument("--tree", action="append", default=[], help="a folder to copy whole")
    p.add_argument("--path", action="append", default=[], help="a path to copy as it is")
    p.add_argument("--program", action="append", default=[],
                   help="a program to copy with its libraries")
    p.add_argument("--output", help="the recorded run's output: its digest kept")
    p.add_argument("--key", default="", help="what was staged, kept as 'key'")
    p.add_argument("--json", help="write what was staged here")
    argv = sys.argv[1:] if argv is None else argv
    args = p.parse_args(argv)
    try:
        if not os.path.isdir(args.dest):
            raise ValueError(f"{args.dest} is not a folder")
        start = time.monotonic()
        s = Stage(args.dest)
        calls = 0
        network = set()
        for log in args.log:
            found = strace.read(log)
            calls += found.calls
            network |= found.network
            for path in sorted(found.paths):
                s.path(path)
            for path in sorted(found.dirs_read):
                s.listing(path)
            for path in sorted(found.execs):
                s.program(path)
        for path in args.tree:
            s.tree(os.path.abspath(path))
        for path in args.path:
            s.path(os.path.abspath(path))
        for path in args.program:
            s.program(path)
        s.finish()
        digest = None
        if args.output:
            with open(args.output, "rb") as f:
                digest = hashlib.file_digest(f, "sha256").hexdigest()
    except (OSError, ValueError) as e:
        print(f"{p.prog}: error: {e}", file=sys.stderr)
        return 1
    summary = {"files": s.files, "bytes": s.bytes, "directories": len(s.dirs),
               "links": s.links, "placeholders": s.placeholders, "traced_calls": calls,
               "trees": args.tree,
               "programs": args.program, "network": sorted(network),
               "packages": packages(s.run),
               "seconds": round(time.monotonic() - start, 3)}
    if digest:
        summary["output_sha256"] = digest
    if args.key:
        summary["key"] = args.key
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)
    print(f"staged {s.files} files ({s.bytes / 2**20:.1f} MiB), {len(s.dirs)} folders, "
          f"{s.links} links and {s.placeholders} listed files by name in "
          f"{summary['seconds']:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
