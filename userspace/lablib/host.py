"""The machine the lab's runners run on: how many of its cores are free
for VMs (the split sweeps' parts, make ab's boots)."""
import os
import pathlib


def free_cores(cores=None, loadavg=None):
    """(free, cores, load): the cores less the 1-minute load average,
    rounded, at least 1."""
    cores = cores or os.cpu_count() or 1
    if loadavg is None:
        loadavg = float(pathlib.Path("/proc/loadavg").read_text().split()[0])
    return max(1, cores - int(loadavg + 0.5)), cores, loadavg
