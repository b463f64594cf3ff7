"""What scripts/vm.sh tells the guest's kernel about the emulator, and the
/tmp it gives the guest."""
import pathlib
import re

import pytest

CMDLINE = pathlib.Path("/proc/cmdline").read_text()
ACCEL = (re.search(r"\blab\.accel=(\S+)", CMDLINE) or [None, None])[1]
CLOCK = (re.search(r"\blab\.clock=(\S+)", CMDLINE) or [None, None])[1]


@pytest.mark.skipif(ACCEL != "tcg", reason="under KVM the vCPUs run at hardware speed")
def test_tcg_guest_trusts_the_tsc():
    """Under TCG the TSC is the host's: the clocksource stays tsc."""
    current = pathlib.Path("/sys/devices/system/clocksource/clocksource0/current_clocksource")
    assert current.read_text().strip() == "tsc"


@pytest.mark.skipif(ACCEL != "tcg" or CLOCK != "host",
                    reason="only a starved vCPU on the host's clock looks locked up")
def test_starved_vcpu_is_no_soft_lockup():
    """A loaded host starves a vCPU thread for tens of seconds: the
    soft-lockup detector waits 120 s (watchdog_thresh 60) before it says
    so, and still catches a real hang."""
    assert pathlib.Path("/proc/sys/kernel/watchdog_thresh").read_text().strip() == "60"


def test_tmp_is_the_guests_own():
    """vm.sh mounts a tmpfs on /tmp before the command: virtme-ng's /tmp is
    an overlay on the host's, which the host changes beneath it."""
    mounts = [ln.split() for ln in pathlib.Path("/proc/self/mounts").read_text().splitlines()]
    tmp = [m for m in mounts if m[1] == "/tmp"]
    assert tmp and tmp[-1][0] == "lab-tmp" and tmp[-1][2] == "tmpfs", tmp
