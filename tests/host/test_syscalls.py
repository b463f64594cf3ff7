"""lablib.syscalls: the delay module's stats/by_call and the 64-bit table."""
import sys

import pytest
from lablib import syscalls


def counts(*values):
    return b"".join(v.to_bytes(8, sys.byteorder) for v in values)


def test_by_call_reads_the_modules_counts():
    assert syscalls.by_call(counts(0, 5, 2**40)) == [0, 5, 2**40]


@pytest.mark.parametrize("data", [b"", b"\0" * 7, b"\0" * 12])
def test_by_call_refuses_what_is_not_counts(data):
    with pytest.raises(ValueError, match="8-byte counts"):
        syscalls.by_call(data)


def test_window_is_the_difference(tmp_path):
    before, after = tmp_path / "b.bin", tmp_path / "a.bin"
    before.write_bytes(counts(1, 2, 3))
    after.write_bytes(counts(1, 12, 4))
    assert syscalls.window(before, after) == [0, 10, 1]


def test_window_refuses_a_reloaded_module():
    with pytest.raises(ValueError, match="loaded again"):
        syscalls.window(counts(5, 5), counts(6, 1))
    with pytest.raises(ValueError, match="2 and 3 counts"):
        syscalls.window(counts(5, 5), counts(6, 6, 6))


def test_table_names_the_64_bit_calls(tmp_path):
    tbl = tmp_path / syscalls.TABLE
    tbl.parent.mkdir(parents=True)
    tbl.write_text("# comment\n0\tcommon\tread\tsys_read\n"
                   "13\t64\trt_sigaction\tsys_rt_sigaction\n"
                   "512\tx32\trt_sigaction\tcompat_sys_rt_sigaction\n")
    assert syscalls.table(tmp_path) == {0: "read", 13: "rt_sigaction"}


def test_named_keeps_the_nonzero_counts_and_the_other_slot():
    names = {0: "read", 1: "write"}
    assert syscalls.named(syscalls.by_call(counts(3, 0, 7, 2)), names) == \
        {"read": 3, "2": 7, syscalls.OTHER: 2}


def test_numbers_of_names_in_the_order_given(tmp_path):
    tbl = {0: "read", 1: "write", 110: "getppid"}
    assert syscalls.numbers("getppid,read,1", tbl) == [110, 0, 1]
    with pytest.raises(ValueError, match="'bogus' is no call"):
        syscalls.numbers("read,bogus", tbl)
    with pytest.raises(ValueError, match="listed twice"):
        syscalls.numbers("read,0", tbl)


def test_windows_turn_a_sweeps_copies_into_its_csv_files(tmp_path):
    """The guest keeps stats/by_call before and after each point; the host
    writes the rows of the nonzero counts, in the order the points ran,
    into the file the index names, and the copies go."""
    raw = tmp_path / "by_call"
    raw.mkdir()
    for n, (b, a) in enumerate([((1, 2, 3, 0), (1, 12, 3, 4)), ((1, 12, 3, 4), (2, 12, 3, 4)),
                                ((0, 0, 0, 0), (0, 5, 0, 0))], 1):
        (raw / f"{n}.before").write_bytes(counts(*b))
        (raw / f"{n}.after").write_bytes(counts(*a))
    (raw / "index.csv").write_text("1,by_call.csv,750,\n2,by_call.csv,0,\n"
                                   "3,clients_by_call.csv,0,\n")
    syscalls.windows(tmp_path)
    assert (tmp_path / "by_call.csv").read_text() == \
        "loops,ns,nr,calls\n750,,1,10\n750,,3,4\n0,,0,1\n"
    assert (tmp_path / "clients_by_call.csv").read_text() == "loops,ns,nr,calls\n0,,1,5\n"
    assert not raw.exists()
    syscalls.windows(tmp_path)          # nothing left to do: nothing done
    raw.mkdir()
    (raw / "1.before").write_bytes(counts(1, 2, 3, 0))
    (raw / "1.after").write_bytes(counts(0, 12, 3, 4))
    (raw / "index.csv").write_text("1,by_call.csv,0,\n")
    with pytest.raises(ValueError, match="loaded again"):
        syscalls.windows(tmp_path)

