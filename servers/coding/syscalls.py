"""The system-call filter of sandboxed runs: a seccomp BPF program built here, installed in the child.

Installed last before exec, it stays on every process of the run (the util-linux tools that
finish the confinement, the init shell and the program) and cannot be removed. It refuses:

- ``socket()`` of every family but ``AF_INET`` and ``AF_INET6`` (no ``AF_UNIX``, ``AF_NETLINK``,
  ``AF_VSOCK``, ``AF_PACKET``...): a host socket cannot be reached even where a path is visible.
  ``socketpair()`` stays allowed: it connects only to itself (asyncio and multiprocessing use it);
- ``ptrace`` and what reads or writes another process (``process_vm_readv``/``writev``,
  ``pidfd_getfd``, ``process_madvise``);
- new user namespaces (``clone``/``unshare`` with ``CLONE_NEWUSER``, any namespace flag on
  ``clone``; ``clone3`` answers ENOSYS so the C library falls back to ``clone``) and ``setns``:
  a user namespace would give the run capabilities over mounts of its own. The filter of seeded
  (sim) runs lets ``setns`` enter a user namespace (``nstype`` exactly ``CLONE_NEWUSER``, no other
  kind), which ``nsenter`` needs to put the run in the namespace that shows its uid as a constant;
  entering one needs ``CAP_SYS_ADMIN`` in it, which the program never has;
- kernel surfaces an unprivileged program may otherwise reach: ``bpf``, ``perf_event_open``,
  ``io_uring_*``, ``userfaultfd``, the key ring (``keyctl``, ``add_key``, ``request_key``), and the
  calls that need privileges anyway (modules, ``kexec``, ``reboot``, ``swapon``, ``syslog``,
  ``acct``, ``quotactl``, ``chroot``, ``pivot_root``, ``open_by_handle_at``, ``iopl``...);
- on x86-64, the x32 ABI; any other architecture kills the process.

In seeded runs ``getrandom`` answers ``ENOSYS``, so the C library and Python read ``/dev/urandom``
instead, which such a run sees as a stream drawn from its seed (:mod:`openenv_mcp.servers.coding.confinement`).

Refused calls fail with ``EPERM`` (``EAFNOSUPPORT`` for a socket family), so programs see an
ordinary error. Only x86-64 and AArch64 have a filter; elsewhere :func:`build` returns None.
"""

from __future__ import annotations

import ctypes
import errno
import platform
import socket
import struct
from dataclasses import dataclass

__all__ = ["Filter", "build", "numbers_of"]

_LD_W_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_ALLOW = 0x7FFF_0000
_KILL_PROCESS = 0x8000_0000
_ERRNO = 0x0005_0000
_NR, _ARCH, _ARG0, _ARG1 = 0, 4, 16, 24  # offsets in struct seccomp_data (low 32 bits of args[i], little-endian)
_X32_BIT = 0x4000_0000
_CLONE_NEW_ANY = 0x0002_0000 | 0x0400_0000 | 0x0800_0000 | 0x1000_0000 | 0x2000_0000 | 0x4000_0000 | 0x0200_0000
_CLONE_NEWUSER = 0x1000_0000

_DENIED = (
    "ptrace process_vm_readv process_vm_writev pidfd_getfd process_madvise setns bpf perf_event_open "
    "io_uring_setup io_uring_enter io_uring_register userfaultfd keyctl add_key request_key kexec_load "
    "kexec_file_load init_module finit_module delete_module reboot swapon swapoff syslog acct quotactl "
    "quotactl_fd chroot pivot_root open_by_handle_at fanotify_init lookup_dcookie vhangup iopl ioperm"
)

# AUDIT_ARCH and "name number" pairs, from the kernel's system-call tables
_TABLES: dict[str, tuple[int, str]] = {
    "x86_64": (
        0xC000_003E,
        "socket 41 clone 56 clone3 435 unshare 272 getrandom 318 ptrace 101 process_vm_readv 310 process_vm_writev 311 "
        "pidfd_getfd 438 process_madvise 440 setns 308 bpf 321 perf_event_open 298 io_uring_setup 425 "
        "io_uring_enter 426 io_uring_register 427 userfaultfd 323 keyctl 250 add_key 248 request_key 249 "
        "kexec_load 246 kexec_file_load 320 init_module 175 finit_module 313 delete_module 176 reboot 169 "
        "swapon 167 swapoff 168 syslog 103 acct 163 quotactl 179 quotactl_fd 443 chroot 161 pivot_root 155 "
        "open_by_handle_at 304 fanotify_init 300 lookup_dcookie 212 vhangup 153 iopl 172 ioperm 173",
    ),
    "aarch64": (
        0xC000_00B7,
        "socket 198 clone 220 clone3 435 unshare 97 getrandom 278 ptrace 117 process_vm_readv 270 "
        "process_vm_writev 271 pidfd_getfd 438 process_madvise 440 setns 268 bpf 280 perf_event_open 241 "
        "io_uring_setup 425 io_uring_enter 426 io_uring_register 427 userfaultfd 282 keyctl 219 add_key 217 "
        "request_key 218 kexec_load 104 kexec_file_load 294 init_module 105 finit_module 273 delete_module 106 "
        "reboot 142 swapon 224 swapoff 225 syslog 116 acct 89 quotactl 60 quotactl_fd 443 chroot 51 pivot_root 41 "
        "open_by_handle_at 265 fanotify_init 262 lookup_dcookie 18 vhangup 58",
    ),
}


def numbers_of(machine: str) -> dict[str, int]:
    """System-call numbers by name for ``machine`` (empty when there is no table for it)."""
    words = _TABLES[machine][1].split() if machine in _TABLES else []
    return {name: int(number) for name, number in zip(words[::2], words[1::2], strict=True)}


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


@dataclass(frozen=True, slots=True)
class Filter:
    """A built BPF program, kept alive with the structure ``prctl`` takes."""

    program: ctypes.Array[ctypes.c_char]
    fprog: _SockFprog
    length: int

    @property
    def address(self) -> int:
        return ctypes.addressof(self.fprog)


def _statement(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def build(machine: str | None = None, *, seeded: bool = False) -> Filter | None:
    """The filter for this machine's architecture, or None when there is no table for it.

    ``seeded``: the variant for seeded (sim) runs: ``getrandom`` answers ENOSYS, and ``setns`` may
    enter a user namespace (see the module's docstring).
    """
    machine = machine or platform.machine()
    if machine not in _TABLES:
        return None
    arch, numbers = _TABLES[machine][0], numbers_of(machine)
    deny = _ERRNO | errno.EPERM
    code = [
        _statement(_LD_W_ABS, _ARCH),
        _statement(_JEQ, arch, jt=1),
        _statement(_RET, _KILL_PROCESS),
        _statement(_LD_W_ABS, _NR),
    ]
    if arch == _TABLES["x86_64"][0]:
        code += [_statement(_JGE, _X32_BIT, jf=1), _statement(_RET, deny)]
    if seeded:
        code += [_statement(_JEQ, numbers["getrandom"], jf=1), _statement(_RET, _ERRNO | errno.ENOSYS)]
        code += [
            _statement(_JEQ, numbers["setns"], jf=4),
            _statement(_LD_W_ABS, _ARG1),
            _statement(_JEQ, _CLONE_NEWUSER, jf=1),
            _statement(_RET, _ALLOW),
            _statement(_RET, deny),
        ]
    for name in _DENIED.split():
        if name in numbers:
            code += [_statement(_JEQ, numbers[name], jf=1), _statement(_RET, deny)]
    code += [_statement(_JEQ, numbers["clone3"], jf=1), _statement(_RET, _ERRNO | errno.ENOSYS)]
    # socket(family): only the internet families (the run's network namespace has no usable interface)
    code += [
        _statement(_JEQ, numbers["socket"], jf=5),
        _statement(_LD_W_ABS, _ARG0),
        _statement(_JEQ, socket.AF_INET, jt=2),
        _statement(_JEQ, socket.AF_INET6, jt=1),
        _statement(_RET, _ERRNO | errno.EAFNOSUPPORT),
        _statement(_RET, _ALLOW),
    ]
    # clone(flags): no new namespace of any kind; unshare(flags): no new user namespace
    code += [
        _statement(_JEQ, numbers["clone"], jf=4),
        _statement(_LD_W_ABS, _ARG0),
        _statement(_JSET, _CLONE_NEW_ANY, jf=1),
        _statement(_RET, deny),
        _statement(_RET, _ALLOW),
        _statement(_JEQ, numbers["unshare"], jf=4),
        _statement(_LD_W_ABS, _ARG0),
        _statement(_JSET, _CLONE_NEWUSER, jf=1),
        _statement(_RET, deny),
        _statement(_RET, _ALLOW),
        _statement(_RET, _ALLOW),
    ]
    raw = b"".join(code)
    program = ctypes.create_string_buffer(raw, len(raw))
    fprog = _SockFprog(len(code), ctypes.addressof(program))
    return Filter(program=program, fprog=fprog, length=len(code))
