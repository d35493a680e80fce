"""The harness policy: an unmodified agent CLI plays each episode, its model behind the capture proxy.

For each episode, :class:`HarnessPolicy` makes a home of its own (``HOME``, the XDG folders and ``TMPDIR`` inside
it), has the :class:`~openenv_mcp.harnesses.configs.Harness` write its MCP config (the server's ``/mcp`` with
``X-Episode-Id``) and model config (the proxy's ``/ep/ID/v1``) there, and runs the CLI headless with the task's
prompt, in a process group of its own, for ``timeout`` seconds at most. Its tool calls reach the server through
the server's MCP door like any client's; its model calls go through the proxy, which records each turn into the
episode. When the CLI is done (or stopped), what it left running is stopped
(:func:`~openenv_mcp.harnesses.cleanup.stop_leftovers`) and its home removed; then the episode's steps, reward and
done flag are read from the server, and the episode ends ``done``, ``step_limit``, ``stopped`` (the harness
finished with the task open), ``harness_timeout``, or fails with :class:`HarnessFailed` (``harness_error``: it
exited with an error, the tail of its stderr is the message).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from openenv_mcp.harnesses.cleanup import stop_leftovers
from openenv_mcp.harnesses.configs import Harness, Job
from openenv_mcp.rollout.runner import PolicyError, RolloutEpisode

if TYPE_CHECKING:
    from openenv_mcp.proxy import CaptureProxy

__all__ = ["HarnessFailed", "HarnessPolicy"]

_TAIL = 2000  # characters of a failed harness's stderr kept as its error
_KEPT_ENV = ("PATH", "LANG", "LC_ALL", "TZ", "SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS")


class HarnessFailed(PolicyError):
    """The agent harness exited with an error (its stderr's tail is the message)."""

    code = "harness_error"
    end_reason = "harness_error"


class HarnessPolicy:
    """Play each episode with an agent CLI (``--policy harness``).

    Args:
        harness: Which CLI, and how it is configured (:data:`~openenv_mcp.harnesses.configs.HARNESSES`).
        command: Its executable (found on ``PATH``, or ``--harness-command``).
        proxy: The running capture proxy its model calls go through (its store is the server's).
        model: The model name the harness asks for.
        timeout: Seconds the harness has for one episode; past them it is stopped (``harness_timeout``).
        max_turns: Model calls at most, for harnesses that take such a limit (default: the episode's step limit).
    """

    def __init__(
        self,
        harness: Harness,
        *,
        command: str,
        proxy: CaptureProxy,
        model: str,
        timeout: float,
        max_turns: int | None = None,
    ) -> None:
        self.harness = harness
        self.command = command
        self.proxy = proxy
        self.model = model
        self.timeout = timeout
        self.max_turns = max_turns
        self.leftovers = 0  # processes a harness left running that were stopped, over all episodes

    def identity(self) -> dict[str, Any]:
        """What makes two runs of this policy comparable."""
        return {
            "harness": self.harness.name,
            "harness_package": self.harness.package,
            "model": self.model,
            "base_url": self.proxy.upstream,
            "harness_timeout": self.timeout,
            "max_turns": self.max_turns,
        }

    async def __call__(self, episode: RolloutEpisode) -> None:
        home = Path(tempfile.mkdtemp(prefix=f"openenv-{self.harness.name}-"))
        url, served_as = episode.address()  # the replica that holds it, under the id that replica knows
        try:
            job = Job(
                home=home,
                server=episode.server.name,
                mcp_url=f"{url.rstrip('/')}/mcp",
                episode_id=served_as,
                base_url=self.proxy.base_url(served_as, v1=not self.harness.appends_v1),
                model=self.model,
                prompt=episode.prompt,
                max_turns=self.max_turns or episode.max_steps,
                time_limit=self.timeout,
            )
            code, stderr = await self._run(job)
        finally:
            self.leftovers += len(await stop_leftovers(home))
            shutil.rmtree(home, ignore_errors=True)
        await episode.refresh()
        self._count_turns(episode)
        if episode.done:  # the environment's word comes first, however the harness ended
            episode.end_reason = "step_limit" if episode.steps >= episode.max_steps else "done"
        elif code is None:
            episode.end_reason = "harness_timeout"
        elif code != 0:
            raise HarnessFailed(f"{self.harness.name} exited with code {code}: {stderr}")

    async def _run(self, job: Job) -> tuple[int | None, str]:
        """Run the harness in ``job.home``: its exit code (``None`` when it ran past the time limit) and the tail of
        its stderr."""
        launch = self.harness.prepare(job)
        env = {key: os.environ[key] for key in _KEPT_ENV if key in os.environ}
        for name, folder in (
            ("XDG_CONFIG_HOME", ".config"),
            ("XDG_DATA_HOME", ".local/share"),
            ("XDG_STATE_HOME", ".local/state"),
            ("XDG_CACHE_HOME", ".cache"),
            ("TMPDIR", "tmp"),
        ):
            (job.home / folder).mkdir(parents=True, exist_ok=True)
            env[name] = str(job.home / folder)
        env.update(HOME=str(job.home), NO_COLOR="1", CI="1")
        env.update(launch.env)
        work = job.home / "work"
        work.mkdir()
        deadline = anyio.current_time() + self.timeout
        with (job.home / "stdout.log").open("wb") as stdout, (job.home / "stderr.log").open("wb") as stderr:
            for arguments in launch.before:  # set-up runs: within the same time limit, failing as the run would
                with anyio.move_on_after(max(0.0, deadline - anyio.current_time())) as limit:
                    done = await anyio.run_process(
                        [self.command, *arguments], stdout=stdout, stderr=stderr, cwd=work, env=env, check=False
                    )
                if limit.cancelled_caught or done.returncode != 0:
                    return None if limit.cancelled_caught else done.returncode, _tail(job.home / "stderr.log")
            process = await anyio.open_process(
                [self.command, *launch.arguments],
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
                cwd=work,
                env=env,
                start_new_session=True,  # a group of its own: stopped whole, whatever it spawned
            )
            code: int | None = None
            with anyio.move_on_after(max(0.0, deadline - anyio.current_time())):
                code = await process.wait()
            if code is None:
                await stop_leftovers(job.home, group=process.pid)
                with anyio.CancelScope(shield=True):
                    await process.wait()
            else:  # what it left running (Cline's hub daemon), counted
                self.leftovers += len(await stop_leftovers(job.home, group=process.pid))
        return code, _tail(job.home / "stderr.log")

    def _count_turns(self, episode: RolloutEpisode) -> None:
        """The episode's model side, from the turns the proxy recorded for it (side requests left out)."""
        rows = [row for row in self.proxy.turns(episode.address()[1]) if not row.get("side")]
        episode.model.turns = len(rows)
        episode.model.text_replies = sum(1 for row in rows if not row.get("calls"))
        episode.model.seconds = sum(row.get("seconds") or 0.0 for row in rows)  # the model's time, as the proxy saw it
        texts = [row["text"] for row in rows if row.get("text")]
        if texts:
            episode.model.last_text = texts[-1][:500]


def _tail(path: Path) -> str:
    try:
        text = path.read_bytes()[-_TAIL * 4 :].decode(errors="replace")
    except OSError:
        return "(no stderr)"
    text = text.strip()[-_TAIL:]
    return text or "(nothing on stderr)"
