"""A virtual X display: one Xvfb server, on a display number it picks itself.

Xvfb's ``-displayfd`` makes the server choose the first free display number and claim it with
its lock file (``/tmp/.X<n>-lock``, created atomically), then write the number to us once it
accepts connections: no two displays collide, across episodes and across processes, and the
number arriving is the readiness signal. With ``terminate_with_clients`` the server exits when
its last client goes (the sim editor), so a crashed server process leaves no display behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import signal
from dataclasses import dataclass
from pathlib import Path

from openenv_mcp import BackendUnavailable
from openenv_mcp.servers.desktop.authority import Authority

__all__ = ["SOCKET_DIRECTORY", "VirtualDisplay", "limit_memory", "stop_process"]

SOCKET_DIRECTORY = Path("/tmp/.X11-unix")


@dataclass(eq=False)
class VirtualDisplay:
    """A running Xvfb server (``name`` is ``:<n>``)."""

    name: str
    process: asyncio.subprocess.Process
    authority: Authority | None = None

    @property
    def number(self) -> int:
        return int(self.name[1:])

    @property
    def socket(self) -> Path:
        """The server's Unix socket."""
        return SOCKET_DIRECTORY / f"X{self.number}"

    @classmethod
    async def start(
        cls,
        *,
        width: int,
        height: int,
        timeout: float = 20.0,
        terminate_with_clients: bool = False,
        log: Path | None = None,
        authority: Authority | None = None,
        memory_limit: int | None = None,
    ) -> VirtualDisplay:
        """Start Xvfb with a ``width`` x ``height`` x 24-bit screen; BackendUnavailable when it cannot.

        Args:
            width: Screen width in pixels.
            height: Screen height in pixels.
            timeout: Seconds to wait for the server to accept connections.
            terminate_with_clients: Exit when the last client disconnects.
            log: A file for the server's messages.
            authority: The cookie clients must present; None leaves the display open to local users.
            memory_limit: Bytes of address space the server may use (None: no limit).
        """
        read_end, write_end = os.pipe()
        args = ["-displayfd", str(write_end), "-screen", "0", f"{width}x{height}x24", "-nolisten", "tcp", "-dpi", "96"]
        if authority is not None:
            args += ["-auth", str(authority.path)]
        if terminate_with_clients:
            args.append("-terminate")
        stderr = log.open("ab") if log is not None else None
        try:
            process = await asyncio.create_subprocess_exec(
                "Xvfb",
                *args,
                pass_fds=(write_end,),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=stderr if stderr is not None else asyncio.subprocess.DEVNULL,
                start_new_session=True,
            )
        except FileNotFoundError:
            os.close(read_end)
            raise BackendUnavailable(
                "Xvfb is not installed: apt-get install xvfb (scripts/debian-packages lists what the desktop needs)"
            ) from None
        finally:
            os.close(write_end)
            if stderr is not None:
                stderr.close()
        if memory_limit is not None:
            limit_memory(process.pid, memory_limit)
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        pipe = os.fdopen(read_end, "rb", buffering=0)
        transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
        try:
            number = (await asyncio.wait_for(reader.readline(), timeout)).decode("ascii", "replace").strip()
        except TimeoutError:
            await stop_process(process)
            raise BackendUnavailable(f"Xvfb did not start within {timeout:g} s") from None
        finally:
            transport.close()
        if not number.isdigit():
            code = await stop_process(process)
            where = f"; see {log}" if log is not None else ""
            raise BackendUnavailable(f"Xvfb exited (status {code}) before opening a display{where}")
        display = cls(name=f":{number}", process=process, authority=authority)
        if authority is not None:
            try:
                os.chmod(display.socket, 0o600)  # connect() needs write permission on the socket
            except OSError as exc:
                await stop_process(process)
                raise BackendUnavailable(f"Cannot restrict the X socket {display.socket}: {exc}") from None
        return display

    async def stop(self, timeout: float = 5.0) -> None:
        """Stop the server (if it has not already stopped) and reap it."""
        await stop_process(self.process, timeout)


def limit_memory(pid: int, limit: int) -> None:
    """Cap the address space of the running process ``pid`` at ``limit`` bytes, and let it write no core file.

    Soft and hard limits alike; set from outside (``prlimit``), whatever the event loop's way of
    spawning. A process that hits the limit fails to allocate (Tk aborts), and dumps nothing.
    """
    with contextlib.suppress(ProcessLookupError):  # gone already: its exit is reported elsewhere
        resource.prlimit(pid, resource.RLIMIT_AS, (limit, limit))
        resource.prlimit(pid, resource.RLIMIT_CORE, (0, 0))


async def stop_process(process: asyncio.subprocess.Process, timeout: float = 5.0) -> int:
    """SIGTERM, then SIGKILL after ``timeout`` s; always reaped. Returns the exit status."""
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), timeout)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
    return await process.wait()
