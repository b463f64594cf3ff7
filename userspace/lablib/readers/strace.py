"""strace's log of a command: the files it touched.

`strace -f -y -o LOG -e trace=%file,%process,chdir,fchdir CMD` writes one
line per system call, the process's PID first (-f).  -y writes the path
after every file descriptor, AT_FDCWD (the working directory) included:

    1234  openat(AT_FDCWD</work>, "a.c", O_RDONLY) = 3</work/a.c>
    1234  newfstatat(AT_FDCWD</work>, "b.h", {st_mode=...}, 0) = 0
    1234  execve("/usr/bin/gcc", ["gcc", ...], ...) = 0
    1234  clone(...) = 1240
    1240  chdir("lib") = 0

With %network traced too, the addresses a socket was connected or sent
to are kept, those of this machine (loopback) left out:

    1234  connect(3<socket:[77]>, {sa_family=AF_INET, sin_port=htons(80),
          sin_addr=inet_addr("192.0.2.1")}, 16) = -1 EINPROGRESS (...)

A call interrupted by another process's is split in two lines, its
beginning ending in '<unfinished ...>' and its end starting '<... openat
resumed>'.  Calls that failed ('= -1 ENOENT (...)') touched nothing that
exists.  The few calls without a directory descriptor that take a
relative path (execve, access, stat, readlink, chdir) are resolved
against the working directory the process last showed, which a child
takes from its parent.
"""
import ipaddress
import os
import re

LINE = re.compile(r"^(?P<pid>\d+)\s+(?P<rest>.*)$")
CALL = re.compile(r"^(?P<name>\w+)\((?P<args>.*)\)\s+=\s+(?P<ret>.*)$")
RESUMED = re.compile(r"^<\.\.\. (?P<name>\w+) resumed>(?P<tail>.*)$")
UNFINISHED = " <unfinished ...>"
# The first argument: a descriptor with its path, e.g. AT_FDCWD</work> or 3</usr/lib>.
DIRFD = re.compile(r"^(?:AT_FDCWD|-?\d+)<(?P<dir>[^>]*)>(?:,\s*|$)")
STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
# What a successful call returns with -y: a descriptor and its path.
RETURNED_FD = re.compile(r"^\d+<(?P<path>[^>]*)>")
CWD = re.compile(r"AT_FDCWD<(?P<cwd>[^>]*)>")
NEW_PROCESS = {"clone", "clone3", "fork", "vfork"}
# The calls that name the address they reach, and how strace writes one.
ADDRESSED = {"connect", "sendto", "sendmsg", "sendmmsg"}
INET = re.compile(r'sa_family=AF_INET6?, sin6?_port=htons\((?P<port>\d+)\).*?'
                  r'(?:inet_addr\("(?P<v4>[^"]*)"\)|inet_pton\(AF_INET6, "(?P<v6>[^"]*)")')


def unescape(s):
    """A path as strace quotes it (\\" \\\\ \\n and \\x.. escapes) back to text."""
    if "\\" not in s:
        return s
    return s.encode("latin-1", "backslashreplace").decode("unicode_escape")


class Log:
    """What one strace log says a command touched: every path a call that
    succeeded named or returned, the directories it opened to list, the
    addresses off this machine it tried to reach, and the programs it
    executed (whose loader or script interpreter the
    kernel opens without a system call of its own)."""

    def __init__(self):
        self.paths = set()
        self.dirs_read = set()
        self.execs = set()
        self.network = set()
        self.cwd = {}
        self.pending = {}
        self.calls = 0

    def feed(self, line):
        m = LINE.match(line.rstrip("\n"))
        if not m:
            return
        pid, rest = int(m["pid"]), m["rest"]
        if rest.endswith(UNFINISHED):
            self.pending[pid] = rest[:-len(UNFINISHED)]
            return
        r = RESUMED.match(rest)
        if r:
            start = self.pending.pop(pid, None)
            if start is None:
                return
            rest = start + r["tail"]
        c = CALL.match(rest)
        if c:
            self.calls += 1
            self.call(pid, c["name"], c["args"], c["ret"])

    def call(self, pid, name, args, ret):
        for cwd in CWD.findall(args):
            self.cwd[pid] = cwd
        if name in ADDRESSED:
            # Tried, whatever came of it: on another machine it may reach.
            for a in INET.finditer(args):
                host = a["v4"] or a["v6"]
                if not ipaddress.ip_address(host).is_loopback:
                    self.network.add(f"{host}:{a['port']}" if a["v4"] else
                                     f"[{host}]:{a['port']}")
        if ret.startswith("-1") or ret.startswith("?"):
            return
        if name in NEW_PROCESS:
            if ret.split()[0].isdigit() and pid in self.cwd:
                self.cwd[int(ret.split()[0])] = self.cwd[pid]
            return
        base = self.cwd.get(pid)
        d = DIRFD.match(args)
        if d:
            base, args = d["dir"], args[d.end():]
        s = STRING.match(args)
        path = None
        if s and s.group(1):
            path = unescape(s.group(1))
            if not path.startswith("/"):
                path = os.path.join(base, path) if base else None
            if path:
                path = os.path.normpath(path)
                self.paths.add(path)
        if name in ("execve", "execveat") and path:
            self.execs.add(path)
        if name == "chdir" and path:
            self.cwd[pid] = path
        if name == "fchdir" and d:
            self.cwd[pid] = d["dir"]
        fd = RETURNED_FD.match(ret)
        if fd:
            self.paths.add(fd["path"])
            if "O_DIRECTORY" in args:
                self.dirs_read.add(fd["path"])


def read(path):
    """The Log of strace log file @path."""
    log = Log()
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            log.feed(line)
    return log
