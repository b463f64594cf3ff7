"""A sweep's plan: its options, declared and checked once, and the file the
guest's runner reads.

'lab sweep' parses a sweep's options here (add_options: the one
declaration of them, which 'lab sweep --help' shows), fills in what the
workload declares (lablib.sweep.catalog) and what the clock it runs on
wants, and writes a plan a workload: a file of shell assignments
(FIELDS says each) that workloads/sweep.sh sources in the guest.  The
guest parses no option; the stand-ins of the tests read the same file
with read().
"""
import os
import pathlib
import re
import shlex

from lablib import lists, syscalls
from lablib.experiments import calibration, workloads as raw_schema
from lablib.sweep import catalog

ROOT = pathlib.Path(__file__).resolve().parents[1]
RUNNER = ROOT / "workloads/sweep.sh"
FORMAT = 1
MAX_LOOPS = 1_000_000
MAX_NS = 5_000_000
# The delay module's parameters --set may name (the others the sweep sets).
SETTABLE = ("mode", "where", "every", "first", "ppm", "seed", "delays")
OWN = ("loops", "ns", "syscalls", "cgroup")
# Where the delay comes from: workloads/delay/NAME.sh.
DELAYS = ("module", "bpf", "none")
# The ns a loop of the delay module's costs on the virtual clock (3.03):
# the BPF delay's default points are the workload's loop counts times this.
NS_A_LOOP = 3

# The plan file's fields: name, kind (str, int, list) and what it is.  The
# runner sources the file; read() gives them back as a dict.
FIELDS = (
    ("PLAN_FORMAT", int, "the format of this file"),
    ("WORKLOAD", str, "the workload's name"),
    ("WL_FILE", str, "its file (the runner sources it)"),
    ("RUN_CLOCK", str, "virtual or host: the clock the guest runs on"),
    ("DELAY", str, "where the delay comes from: module, bpf or none (workloads/delay/DELAY.sh)"),
    ("KNOB", str, "loops (calibrated) or ns (the module's ns mode)"),
    ("ALL_VALUES", list, "the sweep's points, increasing from 0"),
    ("VALUES", list, "the points this run measures (a part's, or all)"),
    ("REPEATS", int, "timed runs a point"),
    ("SCALE", str, "full, vm or small: how much work one run is"),
    ("TREE", str, "the Linux tree of kbuild and grep"),
    ("JOBS", int, "make -j of kbuild"),
    ("WORKDIR", str, "scratch space on the guest"),
    ("STEP_SECONDS", int, "a server's saturation step"),
    ("WORK_CPUS", str, "with --here, the CPUs the runner and its work run on (taskset -c), "
                       "or ''"),
    ("STAGING", int, "1: staged into memory in a VM"),
    ("STAGE_FROM", str, "the folder of the archives staged on the host, or ''"),
    ("SYSCALL_NAMES", str, "the delayed calls by name, '' for all"),
    ("SYSCALL_NRS", str, "the same by number, from the system-call table"),
    ("SET_NAMES", list, "the module parameters --set gives"),
    ("SET_VALUES", list, "and their values"),
    ("CALIBRATION", str, "a given calibrate folder, or ''"),
    ("NS_PER_LOOP", str, "its fit: ns a loop ('' if none given)"),
    ("ENTRY_NS", str, "and the cost of entering the delay"),
    ("CALIBRATE_AFTER", int, "1: the runner calibrates after the points"),
    ("CAL_SIZE", list, "calibrate's size options for that"),
    ("PART", str, "K/N of a split sweep, or ''"),
    ("OUTPUT", str, "the parent of the result folder"),
    ("COMMAND", list, "the command after '--' (WL_COMMAND workloads)"),
    ("HOOKS", str, "a file of hooks another experiment adds (the runner sources it), or ''"),
    ("HOOK_VARS", list, "NAME=VALUE settings of those hooks"),
    ("RAW_COLUMNS", str, "raw.csv's header (lablib's RAW_COLUMNS)"),
    ("META_ARGS", list, "meta.json's settings known before the guest runs"),
    ("COMMAND_LINE", list, "the command that made the plan, for meta.json"),
)
KINDS = dict((name, kind) for name, kind, _ in FIELDS)


class BadOption(ValueError):
    """An option's value the sweep cannot take, said in one line."""


def add_options(p):
    """The sweep's options on the argparse parser @p."""
    g = p.add_argument_group("what is swept")
    g.add_argument("-l", "--loops", metavar="LIST",
                   help="loop counts: '0,50,100', 'start:stop:step' or a mix, starting at 0 "
                        "('0' alone: the workload undelayed); default the workload's")
    g.add_argument("--ns", metavar="LIST",
                   help="requested delays in ns instead of loop counts (the module's ns "
                        f"mode); no calibration needed; 0..{MAX_NS}")
    g.add_argument("--syscalls", metavar="NAMES",
                   help="delay only these system calls, by name (read,write,openat); "
                        "default all")
    g.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="one more of the delay module's parameters for the whole sweep "
                        "(again for another): mode=spin|sleep, where=entry|exit, every=N, "
                        "first=K, ppm=P, seed=S, delays=read:2000,futex:50000; recorded in "
                        "meta.json and put back at the end")
    g.add_argument("-r", "--repeats", type=int, metavar="N",
                   help="timed runs a point (default the workload's)")
    g.add_argument("--scale", choices=("full", "vm", "small"),
                   help="how much work one run is (kbuild, grep): full, the whole tree; vm, "
                        "what suits the TCG VM; small, for tests (default vm in a VM, full "
                        "otherwise)")
    g.add_argument("--calibration", metavar="DIR",
                   help="use this analysed calibrate folder (results/latest-calibrate) "
                        "instead of calibrating the loop counts after the points")
    g.add_argument("--delay", choices=DELAYS,
                   help="where the delay comes from: module, the lab kernel's delay module, "
                        "or bpf, the BPF delay (userspace/bpfdelay: any kernel 5.17 or later "
                        "with BTF; ns only), or none, nothing attached and nothing counted "
                        "(--ns 0 alone: the time of the work as it runs); default module, "
                        "and with --here on a kernel without the lab's patches bpf")
    g = p.add_argument_group("where and how")
    g.add_argument("--tree", default=str(ROOT / "build/src/linux-source-6.12"), metavar="DIR",
                   help="Linux source tree for kbuild and grep (default: the one 'make "
                        "kernel' unpacks)")
    g.add_argument("-j", "--jobs", type=int, metavar="N",
                   help="make -j for kbuild (default: the guest's CPUs)")
    g.add_argument("--workdir", default="/tmp/lab-sweep", metavar="DIR",
                   help="scratch space in the guest: kbuild's objects, a server's files")
    g.add_argument("--step-seconds", type=int, metavar="S",
                   help="apache: the length of one httperf rate step (default 1 on the "
                        "virtual clock, 4 on the host's)")
    g.add_argument("--cpus", metavar="LIST",
                   help="with --here: the runner and the work it starts on these CPUs only "
                        "(taskset -c: '1', '2-3'); a vCPU of a cloud VM can be slower than "
                        "its sibling, and work the scheduler moves between them takes either "
                        "time (default: any CPU; not for a server, which places itself and "
                        "its clients)")
    g.add_argument("--no-stage", action="store_true",
                   help="in the VM, run the workload from the host's files (9p) as they "
                        "are, not from a copy in memory of what it touched")
    g = p.add_argument_group("for experiments that extend the sweep")
    g.add_argument("--hooks", metavar="FILE",
                   help="a shell file of hook_* functions the guest's runner calls at its "
                        "steps, another experiment's extension of the sweep "
                        "(docs/reference.md, \"Sweep hooks\")")
    g.add_argument("--hook-var", action="append", default=[], metavar="NAME=VALUE",
                   help="a setting of those hooks (TAX=trace)")


def kernel_cmdline(path=None):
    """The running kernel's command line: @path's, else LAB_CMDLINE's (a
    file standing in for it, for the tests), else /proc/cmdline."""
    return pathlib.Path(path or os.environ.get("LAB_CMDLINE") or "/proc/cmdline").read_text()


def here_delay(kallsyms="/proc/kallsyms", cmdline=None):
    """The delay of a sweep on the running kernel: the module in the lab's
    VM (its command line says lab.variant=) and where the kernel has the
    lab's system-call hook, else the BPF delay."""
    if re.search(r"\blab\.variant=", kernel_cmdline(cmdline)):
        return "module"
    with open(kallsyms) as f:
        hooked = any(line.rstrip().endswith(" syscall_hook_register") for line in f)
    return "module" if hooked else "bpf"


def want(condition, message):
    if not condition:
        raise BadOption(message)


def rising(option, text, maximum, what):
    try:
        values = lists.parse_list(text)
    except ValueError:
        raise BadOption(f"{option} wants a list like '0,50,100', '0:700:50' or a mix "
                        f"(at most {maximum}), not '{text}'") from None
    want(max(values) <= maximum, f"{option} wants {what} of at most {maximum}, not '{text}'")
    want(all(a < b for a, b in zip(values, values[1:])),
         f"{option} wants {what} in increasing order, not '{text}'")
    # 0 alone is a sweep too: the workload undelayed, as the tax runs it.
    want(values[0] == 0, f"{option} wants a list that starts at 0 (the model needs the "
                         f"undelayed run), not '{text}'")
    return values


def settings(items):
    """--set's NAME=VALUE items: (names, values) in order, each once."""
    names, values = [], []
    for kv in items:
        m = re.fullmatch(r"([a-z]+)=([A-Za-z0-9_:,]+)", kv)
        want(m, f"--set wants NAME=VALUE (mode=sleep, where=exit, ppm=1000 ...), not '{kv}'")
        name = m.group(1)
        want(name not in OWN, f"--set {name}: the sweep sets it itself (--loops, --ns, "
                              f"--syscalls; the cgroup is the workload's)")
        want(name in SETTABLE, f"--set wants one of {', '.join(SETTABLE)}, not '{name}'")
        want(name not in names, f"--set {name} given twice")
        names.append(name)
        values.append(m.group(2))
    return names, values


def cpus(text, workload, here):
    """--cpus @text for @workload: a taskset list of CPUs this machine lets
    the sweep run on."""
    want(here, "--cpus is for --here: in the lab's VM the work has its vCPU")
    want(not workload.server, f"--cpus: {workload.name} is a server, which runs on the last "
                              f"CPU and its clients on CPU 0")
    m = re.fullmatch(r"\d+(-\d+)?(,\d+(-\d+)?)*", text)
    want(m, f"--cpus wants CPUs like 1, 2-3 or 0,2, not '{text}'")
    found = set()
    for part in text.split(","):
        first, _, last = part.partition("-")
        found |= set(range(int(first), int(last or first) + 1))
    allowed = os.sched_getaffinity(0)
    want(found and found <= allowed, f"--cpus {text}: this machine runs the sweep on CPUs "
                                     f"{','.join(map(str, sorted(allowed)))}")
    return text


def syscall_numbers(names, tree):
    """The comma-separated numbers of @names, from @tree's table (else the
    lab's source)."""
    want(re.fullmatch(r"[a-z0-9_]+(,[a-z0-9_]+)*", names),
         f"--syscalls wants names like read,write,openat, not '{names}'")
    tree = pathlib.Path(tree)
    if not (tree / syscalls.TABLE).is_file():
        tree = None
    try:
        return ",".join(map(str, syscalls.numbers(names, syscalls.table(tree))))
    except OSError as e:
        raise BadOption(f"--syscalls: no system-call table ({e.strerror}: {e.filename})")
    except ValueError as e:
        raise BadOption(f"--syscalls: {e}") from None


def given_calibration(folder, clock):
    """(ns per loop, entry ns) of a given calibrate folder on @clock."""
    from lablib import results
    path = pathlib.Path(folder)
    want(path.is_dir(), f"--calibration wants a calibrate result folder, not '{folder}'")
    want((path / "raw.csv").is_file() and (path / "summary.json").is_file(),
         f"--calibration wants an analysed calibrate result (raw.csv, summary.json), "
         f"not '{folder}'")
    try:
        _, summary = calibration.load(path)
        slope, _ = calibration.ns_per_loop(summary, where=path)
        entry = calibration.entry_ns(summary)
    except (OSError, ValueError, KeyError) as e:
        raise BadOption(f"--calibration wants a calibration with a fit, not '{folder}' "
                        f"({e})") from None
    try:
        meta = results.read_meta(path)
    except (OSError, ValueError) as e:
        raise BadOption(f"--calibration wants a calibration with a meta.json, not "
                        f"'{folder}' ({e})") from None
    # A loop's ns on the virtual clock is its instructions, on the host's
    # its time on this machine: one calibration does not stand for the other.
    cal_clock = "virtual" if results.on_virtual_clock(meta) else "host"
    want(cal_clock == clock, f"--calibration was taken on the {cal_clock} clock and this "
                             f"sweep runs on the {clock} clock; calibrate on this one "
                             f"(leave --calibration out)")
    return f"{slope:.4f}", f"{entry:.1f}"


def make(args, workload, clock, in_vm, command=(), part=None, points=None, output=".",
         command_line=()):
    """The plan (a dict of FIELDS) of @workload (a catalog.Workload) with
    the options @args, on @clock in a VM or not (@in_vm); @part "K/N" with
    its @points (a list) for a part of a split sweep."""
    w = workload
    delay = args.delay or (here_delay() if getattr(args, "here", False) else "module")
    if delay == "bpf":
        want(args.loops is None and not args.calibration,
             "--delay bpf spins in ns: give --ns LIST, not loop counts")
    if delay == "none":
        want(args.ns == "0" and args.loops is None and not args.calibration
             and not args.syscalls and not args.set,
             "--delay none delays nothing and counts nothing: give --ns 0 alone")
    if args.ns is not None:
        want(args.loops is None, "--ns and --loops exclude each other: one knob at a time")
        knob, values = "ns", rising("--ns", args.ns, MAX_NS, "delays")
    elif delay == "bpf":
        knob, values = "ns", [v * NS_A_LOOP for v in rising("--loops", w.loops, MAX_LOOPS,
                                                            "loop counts")]
    else:
        knob, values = "loops", rising("--loops", args.loops or w.loops, MAX_LOOPS,
                                       "loop counts")
    repeats = args.repeats if args.repeats is not None else (
        w.repeats_virtual if clock == "virtual" else w.repeats)
    want(repeats >= 1, f"--repeats wants a whole number >= 1, not '{repeats}'")
    jobs = args.jobs if args.jobs is not None else 0
    want(jobs >= 0 and (args.jobs is None or jobs >= 1),
         f"--jobs wants a whole number >= 1, not '{args.jobs}'")
    step = args.step_seconds if args.step_seconds is not None else (
        1 if clock == "virtual" else 4)
    want(step >= 1, f"--step-seconds wants a whole number >= 1, not '{step}'")
    if w.command:
        want(command, f"{w.name} needs a command after '--' (see --help)")
    else:
        want(not command, f"{w.name} takes no command after '--' (a workload that "
                          f"declares WL_COMMAND=1 does)")
    work_cpus = cpus(args.cpus, w, getattr(args, "here", False)) if args.cpus else ""
    set_names, set_values = settings(args.set)
    for kv in args.hook_var:
        want(re.fullmatch(r"[A-Z][A-Z0-9_]*=.*", kv),
             f"--hook-var wants NAME=VALUE with NAME in capitals, not '{kv}'")
    want(args.hooks or not args.hook_var, "--hook-var wants --hooks FILE, the hooks it sets")
    hooks = ""
    if args.hooks:
        want(pathlib.Path(args.hooks).is_file(), f"--hooks wants a file of hooks, not "
                                                 f"'{args.hooks}'")
        hooks = str(pathlib.Path(args.hooks).absolute())
    nrs = syscall_numbers(args.syscalls, args.tree) if args.syscalls else ""
    ns_per_loop = entry = ""
    if args.calibration:
        ns_per_loop, entry = given_calibration(args.calibration, clock)
    want(knob != "loops" or values != [0] or args.calibration,
         "-l 0 alone has no loop count to calibrate: give --calibration DIR, or --ns 0")
    mine = values
    k, n = 1, 1
    if part:
        k, n = (int(x) for x in part.split("/"))
        want(n <= len(values), f"--part {part}: {n} parts of {len(values)} points leave "
                               f"some empty")
        want(points, f"--part {part} wants its points (--points LIST: lab sweep deals "
                     f"them out)")
        for v in points:
            want(v in values, f"--points: {v} is not one of the sweep's points "
                              f"({' '.join(map(str, values))})")
        mine = points
    calibrate_after = int(knob == "loops" and not args.calibration and k == 1)
    # 100 batches of 1000 calls a point in 3 rounds, fewer where the loop
    # counts are so large that those would take minutes; on the virtual
    # clock, with no noise to average out, 10 batches in one round.
    cal_size = ["-n", "100", "--calls", "1000", "--rounds", "3"]
    if values[-1] > 20000:
        cal_size = ["-n", "20", "--calls", "100", "--rounds", "3"]
    if clock == "virtual":
        cal_size = ["-n", "10", "--calls", "1000", "--rounds", "1"]
    if args.calibration:
        cal_from = args.calibration
    elif knob == "ns":
        cal_from = "none: ns mode"
    elif k > 1:
        cal_from = f"part 1 of {n}"
    else:
        cal_from = "calibrated by the sweep, after its points"
    scale = args.scale or ("vm" if in_vm else "full")
    bools = {True: "true", False: "false"}
    joined = ",".join(map(str, values))
    meta = [f"workload={w.name}", f"knob={knob}", f"{knob}:=[{joined}]",
            f"syscalls={args.syscalls or 'all'}", f"syscall_numbers={nrs or 'all'}",
            f"repeats:={repeats}", f"scale={scale}", f"tree={args.tree}",
            f"workdir={args.workdir}", f"calibration_from={cal_from}",
            f"staging:={bools[not args.no_stage]}", f"work_cpus={work_cpus or 'any'}"]
    if part:
        meta += [f"part={part}", f"part_points:=[{','.join(map(str, mine))}]"]
    return {
        "PLAN_FORMAT": FORMAT, "WORKLOAD": w.name, "WL_FILE": str(w.path),
        "RUN_CLOCK": clock, "DELAY": delay, "KNOB": knob, "ALL_VALUES": values, "VALUES": mine,
        "REPEATS": repeats, "SCALE": scale, "TREE": args.tree, "JOBS": jobs,
        "WORKDIR": args.workdir, "STEP_SECONDS": step, "WORK_CPUS": work_cpus,
        "STAGING": int(not args.no_stage),
        "STAGE_FROM": "", "SYSCALL_NAMES": args.syscalls or "", "SYSCALL_NRS": nrs,
        "SET_NAMES": set_names, "SET_VALUES": set_values,
        "CALIBRATION": str(pathlib.Path(args.calibration).absolute())
        if args.calibration else "",
        "NS_PER_LOOP": ns_per_loop, "ENTRY_NS": entry, "CALIBRATE_AFTER": calibrate_after,
        "CAL_SIZE": cal_size, "PART": part or "", "OUTPUT": str(output),
        "COMMAND": list(command), "HOOKS": hooks, "HOOK_VARS": list(args.hook_var),
        "RAW_COLUMNS": ",".join(raw_schema.RAW_COLUMNS), "META_ARGS": meta,
        "COMMAND_LINE": list(command_line),
    }


def text(plan):
    """The plan file's text: a shell assignment a field, in FIELDS' order."""
    out = ["# A sweep's plan (lablib.sweep.plan); workloads/sweep.sh sources it."]
    for name, kind, _ in FIELDS:
        value = plan[name]
        if kind is list:
            out.append(f"{name}=({' '.join(shlex.quote(str(v)) for v in value)})")
        else:
            out.append(f"{name}={shlex.quote(str(value))}")
    return "\n".join(out) + "\n"


def write(plan, path):
    path = pathlib.Path(path)
    path.write_text(text(plan))
    return path


def read(path):
    """The fields of a plan file, as make() gave them."""
    plan = {}
    for line in pathlib.Path(path).read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        name, _, value = line.partition("=")
        kind = KINDS.get(name)
        if kind is None:
            raise ValueError(f"{path}: {name} is no field of a plan")
        if kind is list:
            plan[name] = shlex.split(value[1:-1])
        else:
            words = shlex.split(value)
            plan[name] = kind(words[0] if words else "")
    if plan.get("PLAN_FORMAT") != FORMAT:
        raise ValueError(f"{path}: a plan of format {plan.get('PLAN_FORMAT')}, not {FORMAT}")
    for name in ("ALL_VALUES", "VALUES"):
        plan[name] = [int(v) for v in plan[name]]
    return plan


def workload(name):
    """The catalog's Workload @name; BadOption naming the others."""
    found = catalog.workloads()
    if name not in found:
        names = ", ".join(found)
        raise BadOption(f"WORKLOAD wants {names} or all, not '{name}'")
    return found[name]


def of_all():
    return [w for w in catalog.workloads().values() if w.in_all]
