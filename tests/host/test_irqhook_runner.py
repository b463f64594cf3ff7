"""irqhook's runner (sweep.sh) where it decides before it measures."""
import runners


# --- the runner's conventions (tests/host/runners.py) ---------------------------

RUNNER_BAD = [
    ("userspace/irqhook/sweep.sh", ["--loads", "1:"], {}, "--loads wants a list"),
    ("userspace/irqhook/sweep.sh", ["-n", "0"], {}, "--events wants a whole number >= 1"),
    ("userspace/irqhook/sweep.sh", ["-C", "4096"], {}, "--cpu wants a CPU of this machine"),
    ("userspace/irqhook/sweep.sh", ["--trace-cells", "1:fast"], {}, "--trace-cells wants"),
]


test_a_bad_value_is_status_2_and_one_line = runners.bad_value_test(RUNNER_BAD)


test_a_missing_kernel_or_device_is_status_1 = runners.missing_kernel_test(
    "userspace/irqhook/sweep.sh", ["-n", "5"], "no /dev/irqhook")
