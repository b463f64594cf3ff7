"""A page of user memory whose first touch blocks in a page fault until the
test releases it: userfaultfd(2) on an anonymous page, from ctypes.

A driver that copies to or from such a page stays inside that copy, and
holds whatever lock it holds across it, for as long as the test likes: the
way to check that a non-blocking caller never waits for that lock."""
import concurrent.futures
import ctypes
import fcntl
import os
import select
import struct

libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
libc.read.restype = ctypes.c_ssize_t
libc.read.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t]
libc.write.restype = ctypes.c_ssize_t
libc.write.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t]

NR_USERFAULTFD = 323            # x86_64
UFFD_API = 0xAA
UFFDIO_API = 0xC018AA3F         # _IOWR(0xAA, 0x3F, struct uffdio_api)
UFFDIO_REGISTER = 0xC020AA00    # _IOWR(0xAA, 0x00, struct uffdio_register)
UFFDIO_ZEROPAGE = 0xC020AA04    # _IOWR(0xAA, 0x04, struct uffdio_zeropage)
UFFDIO_REGISTER_MODE_MISSING = 1
PROT_RW, MAP_PRIVATE_ANON = 0x3, 0x22
PAGE = os.sysconf("SC_PAGE_SIZE")


class HeldPage:
    """An anonymous page registered for missing-page faults: a copy into
    or out of it blocks until release()."""

    def __init__(self):
        self.uffd = libc.syscall(NR_USERFAULTFD, os.O_CLOEXEC | os.O_NONBLOCK)
        if self.uffd < 0:
            raise OSError(ctypes.get_errno(), "userfaultfd (CONFIG_USERFAULTFD?)")
        fcntl.ioctl(self.uffd, UFFDIO_API, bytearray(struct.pack("QQQ", UFFD_API, 0, 0)))
        self.addr = libc.mmap(None, PAGE, PROT_RW, MAP_PRIVATE_ANON, -1, 0)
        if self.addr in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "mmap")
        fcntl.ioctl(self.uffd, UFFDIO_REGISTER, bytearray(struct.pack(
            "QQQQ", self.addr, PAGE, UFFDIO_REGISTER_MODE_MISSING, 0)))

    def wait_for_fault(self, timeout):
        """True once something faulted on the page (and now waits in it)."""
        return bool(select.select([self.uffd], [], [], timeout)[0])

    def read_into(self, fd, size):
        """Start read(@fd) into the page in a thread and wait until it is
        stuck in the fault; returns its future (the read's return value)."""
        future = _threads.submit(libc.read, fd, ctypes.c_void_p(self.addr), size)
        assert self.wait_for_fault(30), "the read did not fault on the held page"
        return future

    def bytes(self, size):
        return ctypes.string_at(self.addr, size)

    def release(self):
        """Map a zero page: the blocked copy goes on."""
        try:
            fcntl.ioctl(self.uffd, UFFDIO_ZEROPAGE, bytearray(struct.pack(
                "QQQq", self.addr, PAGE, 0, 0)))
        except FileExistsError:
            pass

    def close(self):
        self.release()
        os.close(self.uffd)
        libc.munmap(self.addr, PAGE)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


_threads = concurrent.futures.ThreadPoolExecutor(4)
WAITED = "still waiting"


def run_briefly(fn, timeout=30):
    """fn()'s result, or WAITED if it has not returned after @timeout s (it
    goes on in its thread until whatever holds it lets go)."""
    future = _threads.submit(fn)
    try:
        return future.result(timeout)
    except concurrent.futures.TimeoutError:
        return WAITED


def in_thread(fn):
    """fn() started in a thread now: its future."""
    return _threads.submit(fn)


def errno_of_call(call, *args):
    """0 if call(*args) succeeds, else its errno."""
    try:
        call(*args)
        return 0
    except OSError as e:
        return e.errno
