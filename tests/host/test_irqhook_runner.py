"""irqhook's runner (sweep.sh) where it decides before it measures."""
import pytest
import runners


# --- the runner's conventions (tests/host/runners.py) ---------------------------

RUNNER_BAD = [
    ("userspace/irqhook/sweep.sh", ["--loads", "1:"], {}, "--loads wants a list"),
    ("userspace/irqhook/sweep.sh", ["-n", "0"], {}, "--events wants a whole number >= 1"),
    ("userspace/irqhook/sweep.sh", ["-C", "4096"], {}, "--cpu wants a CPU of this machine"),
    ("userspace/irqhook/sweep.sh", ["--trace-cells", "1:fast"], {}, "--trace-cells wants"),
]


@pytest.mark.parametrize("script,args,env,message", RUNNER_BAD,
                         ids=[runners.case_id(s, a) for s, a, _, _ in RUNNER_BAD])
def test_a_bad_value_is_status_2_and_one_line(script, args, env, message):
    runners.check_bad_value(script, args, message, env)


@pytest.mark.skipif(runners.on_lab_kernel(), reason="this machine runs the lab kernel")
def test_a_missing_kernel_or_device_is_status_1():
    runners.check_missing_kernel("userspace/irqhook/sweep.sh", ["-n", "5"],
                                 "no /dev/irqhook")
