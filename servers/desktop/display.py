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
import signal
from dataclasses import dataclass
from pathlib import Path

from openenv_mcp import BackendUnavailable

__all__ = ["VirtualDisplay", "stop_process"]


@dataclass(eq=False)
class VirtualDisplay:
    """A running Xvfb server (``name`` is ``:<n>``)."""

    name: str
    process: asyncio.subprocess.Process

    @property
    def number(self) -> int:
        return int(self.name[1:])

    @classmethod
    async def start(
        cls,
        *,
        width: int,
        height: int,
        timeout: float = 20.0,
        terminate_with_clients: bool = False,
        log: Path | None = None,
    ) -> VirtualDisplay:
        """Start Xvfb with a ``width`` x ``height`` x 24-bit screen; BackendUnavailable when it cannot."""
        read_end, write_end = os.pipe()
        args = ["-displayfd", str(write_end), "-screen", "0", f"{width}x{height}x24", "-nolisten", "tcp", "-dpi", "96"]
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
        return cls(name=f":{number}", process=process)

    async def stop(self, timeout: float = 5.0) -> None:
        """Stop the server (if it has not already stopped) and reap it."""
        await stop_process(self.process, timeout)


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
