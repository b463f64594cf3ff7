"""irqhook's runner (run.sh, guest.sh) where it decides before it measures."""
import runners


# --- the runner's conventions (tests/host/runners.py) ---------------------------

RUNNER_BAD = [
    ("userspace/irqhook/guest.sh", ["--loads", "1:"], {}, "--loads wants a list"),
    ("userspace/irqhook/guest.sh", ["-n", "0"], {}, "--events wants a whole number >= 1"),
    ("userspace/irqhook/guest.sh", ["-C", "4096"], {}, "--cpu wants a CPU of this machine"),
    ("userspace/irqhook/guest.sh", ["--trace-cells", "1:fast"], {}, "--trace-cells wants"),
]


test_a_bad_value_is_status_2_and_one_line = runners.bad_value_test(RUNNER_BAD)


test_a_missing_kernel_or_device_is_status_1 = runners.missing_kernel_test(
    "userspace/irqhook/guest.sh", ["-n", "5"], "no /dev/irqhook")


test_the_runner_finds_the_grids_folder = runners.guest_folder_test(
    "irqhook", "irqhook", "irqhook-sweep", ["-n", "5", "--output", "out", "--loads", "0,1"])
