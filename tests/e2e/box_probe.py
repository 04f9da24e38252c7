# SPDX-License-Identifier: Apache-2.0
"""What an attacker inside a `boxproxy run` box tries (test_box_escape.py runs it as COMMAND).

    python3 box_probe.py '{"CHECK": ARGUMENT, ...}'

Runs each check in a child process of its own (so a check the kernel kills is reported, not
fatal to the others) and prints one JSON object: CHECK -> its result, a string. "ok" or
"connected" means the check got through; an errno name ("EPERM") that it did not; "signal N"
that the kernel killed it. Loopback only: every address it dials is the test's own.
"""

import ctypes
import errno
import fcntl
import json
import mmap
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import termios

CLONE_NEWNET = 0x40000000
MNT_DETACH = 2
PTRACE_ATTACH = 16
CONNECT_TIMEOUT = 5.0
CHECK_TIMEOUT = 20.0

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def errno_name(number):
    return errno.errorcode.get(number, str(number))


def os_error(e):
    return errno_name(e.errno) if e.errno else type(e).__name__


def checked(result):
    """A libc call's result: 'ok', or the errno name."""
    return "ok" if result != -1 else errno_name(ctypes.get_errno())


def connect(address):
    host, port = address
    s = socket.socket()
    s.settimeout(CONNECT_TIMEOUT)
    try:
        s.connect((host, port))
        return "connected"
    except OSError as e:
        return os_error(e)
    finally:
        s.close()


def setns_then_connect(fd, address):
    result = checked(libc.setns(fd, CLONE_NEWNET))
    return result if result != "ok" else "setns ok, " + connect(address)


# -- the checks -------------------------------------------------------------------------------


def check_connect(address):
    return connect(tuple(address))


def check_nsenter_connect(address):
    """nsenter --net=/proc/1/ns/net, then a connection from there."""
    code = f"import socket; socket.create_connection(({address[0]!r}, {address[1]}), timeout=5); print('connected')"
    r = subprocess.run(["nsenter", "--net=/proc/1/ns/net", sys.executable, "-c", code], capture_output=True,
                       timeout=CHECK_TIMEOUT)
    if r.returncode == 0 and b"connected" in r.stdout:
        return "connected"
    return f"nsenter failed ({r.returncode}): {r.stderr.decode('utf-8', 'replace').strip()[:200]}"


def check_setns_path(argument):
    path, address = argument
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as e:
        return os_error(e)
    return setns_then_connect(fd, tuple(address))


def check_setns_fd(argument):
    fd, address = argument
    return setns_then_connect(fd, tuple(address))


def check_kill(pid):
    try:
        os.kill(pid, 0)
        return "ok"
    except OSError as e:
        return os_error(e)


def check_ptrace(argument):
    """PTRACE_ATTACH, tried only in a PID namespace that is not the host's (as check_umount_proc),
    so a box without its own never stops the proxy."""
    pid, host_pid_namespace = argument
    if os.stat("/proc/self/ns/pid").st_ino == host_pid_namespace:
        return "the host's PID namespace: not tried"
    return checked(libc.ptrace(PTRACE_ATTACH, pid, None, None))


def check_pids(_):
    return " ".join(sorted((n for n in os.listdir("/proc") if n.isdigit()), key=int))


def check_status(_):
    with open("/proc/self/status") as f:
        fields = dict(line.split(":", 1) for line in f if ":" in line)
    return f"NoNewPrivs={fields['NoNewPrivs'].strip()} CapEff={fields['CapEff'].strip()}"


def check_umount_proc(host_mount_namespace):
    """umount2("/proc", MNT_DETACH), tried only in a mount namespace that is not the host's (the
    inode of the test runner's /proc/self/ns/mnt), so a box that fails to have its own cannot
    take the host's /proc away."""
    if os.stat("/proc/self/ns/mnt").st_ino == host_mount_namespace:
        return "the host's mount namespace: not tried"
    return checked(libc.umount2(b"/proc", MNT_DETACH))


def check_sysv_shm(key):
    """shmget of a segment the test made outside the box."""
    return "ok" if libc.shmget(key, 0, 0) != -1 else errno_name(ctypes.get_errno())


def check_bind_low_port(port):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        return "ok"
    finally:
        s.close()


def check_open_for_writing(path):
    """Opens `path` for writing (and writes nothing), so that a box that fails changes nothing."""
    os.close(os.open(path, os.O_WRONLY | os.O_NOCTTY))
    return "ok"


def check_tiocsti(_):
    """Pushes one byte into the input of the terminal on standard input (the test's own pty)."""
    fcntl.ioctl(0, termios.TIOCSTI, b"x")
    return "ok"


def check_session_key(description):
    """keyctl(KEYCTL_SEARCH) for a user key in the session keyring."""
    found = libc.syscall(250, 10, ctypes.c_long(-3), b"user", description.encode(), 0)  # SYS_keyctl, @s
    return "ok" if found > 0 else errno_name(ctypes.get_errno())


def check_listdir(path):
    return " ".join(sorted(os.listdir(path)))


def check_unix_connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # raises EPERM under the filter
    try:
        s.settimeout(CONNECT_TIMEOUT)
        s.connect(path)
        return "connected"
    finally:
        s.close()


def check_socketpair(_):
    a, b = socket.socketpair()
    a.sendall(b"x")
    got = b.recv(1)
    a.close()
    b.close()
    return "ok" if got == b"x" else "no data"


def fd_or_errno(result):
    if result >= 0:
        os.close(result)
        return "ok"
    return errno_name(ctypes.get_errno())


def check_socket_high_bits(_):
    # The kernel reads the family as an int: 0x100000001 is AF_UNIX to it.
    return fd_or_errno(libc.syscall(41, ctypes.c_ulong(0x100000000 | socket.AF_UNIX), socket.SOCK_STREAM, 0))


def check_x32_socket(_):
    return fd_or_errno(libc.syscall(0x40000000 | 41, socket.AF_UNIX, socket.SOCK_STREAM, 0))


def check_io_uring(_):
    params = ctypes.create_string_buffer(120)
    return fd_or_errno(libc.syscall(425, 4, params))


def int80(number, b, c, d, memory=b"", s=0):
    """A system call through the i386 ABI (int $0x80) from this 64-bit process, with ebx, ecx,
    edx and esi; returns eax. A register given as None gets the address of `memory`, copied below
    4 GiB (where a 32-bit pointer reaches); `memory` may be a function of that address."""
    page = mmap.mmap(-1, 4096, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x40,  # MAP_32BIT
                     prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    base = ctypes.addressof(ctypes.c_char.from_buffer(page))
    page.seek(2048)
    page.write(memory(base + 2048) if callable(memory) else memory)
    b, c, d, s = (base + 2048 if r is None else r for r in (b, c, d, s))
    # push rbx; mov eax, N; mov ebx, B; mov ecx, C; mov edx, D; mov esi, S; int 0x80; pop rbx; ret
    code = (b"\x53\xb8" + struct.pack("<I", number) + b"\xbb" + struct.pack("<I", b) + b"\xb9" + struct.pack("<I", c)
            + b"\xba" + struct.pack("<I", d) + b"\xbe" + struct.pack("<I", s) + b"\xcd\x80\x5b\xc3")
    page.seek(0)
    page.write(code)
    return ctypes.CFUNCTYPE(ctypes.c_int)(base)()


def i386_result(value):
    return "ok" if value >= 0 else errno_name(-value)


def kernel_takes_int80():
    """Whether `int $0x80` is a system call here at all: a kernel without i386 emulation (built
    without it, or booted with ia32_emulation=0) kills the caller with SIGSEGV instead. Asked in a
    child of its own, so that this process lives to say what else it found."""
    pid = os.fork()
    if pid == 0:
        try:
            int80(20, 0, 0, 0)  # getpid
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    return not os.WIFSIGNALED(status)


def check_i386_socket(family):
    return i386_result(int80(359, family, socket.SOCK_STREAM, 0))


def check_i386_socketcall(family):
    # socketcall(SYS_SOCKET, {family, type, protocol}): the arguments in memory
    return i386_result(int80(102, 1, None, 0, memory=struct.pack("<III", family, socket.SOCK_STREAM, 0)))


def check_sockets(argument):
    """socket(FAMILY, TYPE, PROTOCOL) for each [FAMILY, TYPE, PROTOCOL], made and closed: one
    result each, space-separated."""
    results = []
    for family, kind, protocol in argument:
        try:
            socket.socket(family, kind, protocol).close()
            results.append("ok")
        except OSError as e:
            results.append(os_error(e))
    return " ".join(results)


def check_commands(argvs):
    """Runs each command: 'exit N' each, ' | '-separated."""
    return " | ".join(f"exit {subprocess.run(argv, capture_output=True, timeout=CHECK_TIMEOUT).returncode}"
                      for argv in argvs)


def check_threads_and_spawn(_):
    """A thread (pthread_create) and a posix_spawn'd program: both try clone3 first in glibc."""
    import threading
    done = []
    thread = threading.Thread(target=lambda: done.append(1))
    thread.start()
    thread.join()
    pid = os.posix_spawn("/bin/true", ["true"], os.environ)
    _, status = os.waitpid(pid, 0)
    return f"thread {'ok' if done else 'not run'} spawn exit {os.waitstatus_to_exitcode(status)}"


def check_socketpairs(kinds):
    """socketpair(AF_UNIX, TYPE) for each TYPE (flags included), one data exchange each: one
    result a type, space-separated."""
    results = []
    for kind in kinds:
        try:
            a, b = socket.socketpair(socket.AF_UNIX, kind)
        except OSError as e:
            results.append(os_error(e))
            continue
        with a, b:
            a.send(b"x")
            results.append("ok" if b.recv(1) == b"x" else "no data")
    return " ".join(results)


def check_dgram_pair_sendto(path):
    """A datagram socketpair's socket sending to a datagram Unix socket of the host by its path."""
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)  # fails under the filter
    with a, b:
        a.sendto(b"from the box", path)
        return "sent"


def check_socket_i386_x32(family):
    """socket(FAMILY, SOCK_STREAM) through the x32 ABI and, where the kernel runs i386 programs,
    through i386's socket(2): 'x32 RESULT i386 RESULT'."""
    x32 = fd_or_errno(libc.syscall(0x40000000 | 41, family, socket.SOCK_STREAM, 0))
    if not kernel_takes_int80():
        return f"x32 {x32} i386 ENOSYS"
    return f"x32 {x32} i386 {i386_result(int80(359, family, socket.SOCK_STREAM, 0))}"


def check_socketpair_abis(kind):
    """socketpair(AF_UNIX, TYPE) through x32, i386's socketpair(2) and i386's socketcall; where
    the kernel runs no i386 program, the i386 results say so ('ENOSYS')."""
    pair = ctypes.create_string_buffer(8)
    x32 = checked(libc.syscall(0x40000000 | 53, socket.AF_UNIX, kind, 0, pair))
    if not kernel_takes_int80():
        return f"x32 {x32} i386 ENOSYS socketcall ENOSYS"
    # The descriptors of a pair made die with this child.
    direct = i386_result(int80(360, socket.AF_UNIX, kind, 0, memory=bytes(8), s=None))
    # socketcall(SYS_SOCKETPAIR, {family, type, protocol, where the pair goes})
    via_socketcall = i386_result(int80(102, 8, None, 0, memory=lambda at: struct.pack(
        "<IIII", socket.AF_UNIX, kind, 0, at + 16) + bytes(8)))
    return f"x32 {x32} i386 {direct} socketcall {via_socketcall}"


def check_unshare(flags):
    """unshare(FLAGS) in this child."""
    return checked(libc.unshare(flags))


def check_clone(flags):
    """clone(FLAGS | SIGCHLD) by the system call (x86_64's argument order): the child exits at once."""
    pid = libc.syscall(56, ctypes.c_ulong(flags | signal.SIGCHLD), 0, 0, 0, 0)
    if pid == 0:
        os._exit(0)
    if pid == -1:
        return errno_name(ctypes.get_errno())
    os.waitpid(pid, 0)
    return "ok"


def check_clone3(flags):
    """clone3({.flags = FLAGS, .exit_signal = SIGCHLD}): the child exits at once."""
    args = struct.pack("<QQQQQQQQ", flags, 0, 0, 0, signal.SIGCHLD, 0, 0, 0)  # clone_args, version 0
    buffer = ctypes.create_string_buffer(args)
    pid = libc.syscall(435, buffer, len(args))
    if pid == 0:
        os._exit(0)
    if pid == -1:
        return errno_name(ctypes.get_errno())
    os.waitpid(pid, 0)
    return "ok"


def check_nested_network(argument):
    """As `unshare -Urn` does (a user namespace and a network namespace of its own, where it has
    every capability), then what that is for: bring lo up, make an nf_tables (netfilter netlink)
    socket and a packet socket. 'unshare RESULT' when the namespaces are refused, else 'lo RESULT
    netfilter RESULT packet RESULT'."""
    uid, gid = os.getuid(), os.getgid()
    result = checked(libc.unshare(0x10000000 | CLONE_NEWNET))  # CLONE_NEWUSER | CLONE_NEWNET
    if result != "ok":
        return f"unshare {result}"
    with open("/proc/self/uid_map", "w") as f:
        f.write(f"0 {uid} 1")
    r = subprocess.run(["ip", "link", "set", "lo", "up"], capture_output=True, timeout=CHECK_TIMEOUT)
    lo = "ok" if r.returncode == 0 else r.stderr.decode("utf-8", "replace").strip()[:80]
    results = [f"lo {lo}"]
    for name, family, kind, protocol in (("netfilter", socket.AF_NETLINK, socket.SOCK_RAW, 12),
                                          ("packet", socket.AF_PACKET, socket.SOCK_RAW, 0)):
        try:
            socket.socket(family, kind, protocol).close()
            results.append(f"{name} ok")
        except OSError as e:
            results.append(f"{name} {os_error(e)}")
    return " ".join(results)


def check_kernel_surface(_):
    """userfaultfd, bpf, perf_event_open, keyctl, add_key, request_key, each in a form the kernel
    lets an unprivileged user make (or, where its settings forbid the real one, in a form it
    answers with another errno than EPERM), one result each: 'NAME RESULT ...'."""
    results = {}
    # userfaultfd(UFFD_USER_MODE_ONLY | O_CLOEXEC): allowed to any user (Linux 5.11)
    results["userfaultfd"] = fd_or_errno(libc.syscall(323, 1 | os.O_CLOEXEC))
    # bpf(BPF_MAP_CREATE) of a small array, and bpf with an unknown command (EINVAL to the kernel)
    attr = ctypes.create_string_buffer(struct.pack("<IIII", 2, 4, 4, 1) + bytes(112))  # BPF_MAP_TYPE_ARRAY
    results["bpf_map"] = fd_or_errno(libc.syscall(321, 0, attr, len(attr)))
    results["bpf_unknown"] = fd_or_errno(libc.syscall(321, 0x7fff, attr, len(attr)))
    # perf_event_open of a software clock on this process, user space only; and with an attr
    # size the kernel refuses (E2BIG or EINVAL to it)
    perf = bytearray(128)
    struct.pack_into("<IIQ", perf, 0, 1, 128, 0)  # PERF_TYPE_SOFTWARE, size, PERF_COUNT_SW_CPU_CLOCK
    struct.pack_into("<Q", perf, 40, 1 << 5)  # exclude_kernel
    results["perf"] = fd_or_errno(libc.syscall(298, ctypes.create_string_buffer(bytes(perf)), 0, -1, -1, 0))
    struct.pack_into("<I", perf, 4, 1)  # size 1
    results["perf_bad_size"] = fd_or_errno(libc.syscall(298, ctypes.create_string_buffer(bytes(perf)), 0, -1, -1, 0))
    # keyctl(KEYCTL_GET_KEYRING_ID, @s), add_key("user") to @s, request_key("user") in @s
    results["keyctl"] = "ok" if libc.syscall(250, 0, ctypes.c_long(-3), 0) > 0 else errno_name(ctypes.get_errno())
    key = libc.syscall(248, b"user", b"boxproxy-probe", b"x", 1, ctypes.c_long(-3))
    results["add_key"] = "ok" if key > 0 else errno_name(ctypes.get_errno())
    found = libc.syscall(249, b"user", b"boxproxy-probe-absent", None, ctypes.c_long(-3))
    results["request_key"] = "ok" if found > 0 else errno_name(ctypes.get_errno())
    return " ".join(f"{name} {result}" for name, result in results.items())


def check_mounts(_):
    """Each of the mount calls (SPEC §19a), in a form the kernel would let root of the box's own
    mount namespace make, or answer with another errno than EPERM (a bad descriptor): a tmpfs, an
    overlay, the new mount API (fsopen, fsconfig, fsmount, move_mount, fspick, open_tree,
    mount_setattr), umount2 and pivot_root. 'NAME RESULT ...', in the box's mount namespace only
    (each a directory of its own under a new temporary one; nothing is left mounted)."""
    base = tempfile.mkdtemp(prefix="probe-mounts-")
    dirs = {name: os.path.join(base, name) for name in ("tmpfs", "overlay", "lower", "upper", "work", "new")}
    for path in dirs.values():
        os.mkdir(path)
    results = {}

    def mounted(name, result):
        results[name] = checked(result)
        if results[name] == "ok":
            libc.umount2(dirs[name].encode(), MNT_DETACH)

    mounted("tmpfs", libc.mount(b"none", dirs["tmpfs"].encode(), b"tmpfs", 0, None))
    options = f"lowerdir={dirs['lower']},upperdir={dirs['upper']},workdir={dirs['work']}".encode()
    mounted("overlay", libc.mount(b"overlay", dirs["overlay"].encode(), b"overlay", 0, options))
    # fsopen("tmpfs", FSOPEN_CLOEXEC), then on its descriptor (or -1: EBADF to the kernel)
    # fsconfig(FSCONFIG_CMD_CREATE), fsmount and move_mount(MOVE_MOUNT_F_EMPTY_PATH)
    context = libc.syscall(430, b"tmpfs", 1)
    results["fsopen"] = "ok" if context >= 0 else errno_name(ctypes.get_errno())
    results["fsconfig"] = checked(libc.syscall(431, context, 6, None, None, 0))
    mount_fd = libc.syscall(432, context, 1, 0)
    results["fsmount"] = "ok" if mount_fd >= 0 else errno_name(ctypes.get_errno())
    results["move_mount"] = checked(libc.syscall(429, mount_fd, b"", -100, dirs["new"].encode(), 4))
    if results["move_mount"] == "ok":
        libc.umount2(dirs["new"].encode(), MNT_DETACH)
    for fd in (context, mount_fd):
        if fd >= 0:
            os.close(fd)
    results["fspick"] = fd_or_errno(libc.syscall(433, -100, b"/", 1))  # FSPICK_CLOEXEC
    results["open_tree"] = fd_or_errno(libc.syscall(428, -100, b"/", 1 | os.O_CLOEXEC))  # OPEN_TREE_CLONE
    attr = ctypes.create_string_buffer(struct.pack("<QQQQ", 0, 0, 0, 0))  # mount_attr: no change
    results["mount_setattr"] = checked(libc.syscall(442, -100, dirs["lower"].encode(), 0, attr, len(attr)))
    results["umount2"] = checked(libc.umount2(dirs["lower"].encode(), MNT_DETACH))  # EINVAL: not a mount
    results["pivot_root"] = checked(libc.syscall(155, dirs["lower"].encode(), dirs["lower"].encode()))
    return " ".join(f"{name} {result}" for name, result in results.items())


CHECKS = {name[len("check_"):]: f for name, f in globals().items() if name.startswith("check_")}


def run_check(name, argument):
    """Runs one check in a child; its result, or how the child died."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            result = CHECKS[name](argument)
        except OSError as e:
            result = os_error(e)
        except Exception as e:  # reported, not raised: the test shows what went wrong
            result = f"{type(e).__name__}: {e}"
        os.write(write_end, result.encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return f"signal {os.WTERMSIG(status)}"
    return data.decode()


def main():
    checks = json.loads(sys.argv[1])
    results = {name: run_check(name, argument) for name, argument in checks.items()}
    print(json.dumps(results))


if __name__ == "__main__":
    main()
