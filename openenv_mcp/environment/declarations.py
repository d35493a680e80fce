"""What an environment declares beyond its tools, for the toolkit to consume: parity, mining, containers, clusters.

    Environment(..., declares=Declarations(
        parity=Parity(normaliser=Normaliser(forgives=(*COMMON, "..."), rule=my_rule), stage=my_stage),
        mining=Mining(miner=my_miner),
        container=ContainerNeeds(system_packages=("nodejs",)),
        cluster=ClusterNeeds(prod_replicas=1, why="..."),
    ))

The toolkit never keeps a table keyed by an environment's name: ``openenv-mcp parity`` reads
``env.declares.parity``, ``openenv-mcp tasks mine`` reads ``env.declares.mining``, the compose files and the
Kubernetes manifests read ``env.declares.container`` and ``env.declares.cluster``. An environment that declares
nothing gets the defaults: the :data:`DEFAULT` normaliser, every task compared, no stage, no miner (``tasks mine``
says so), the slim image with the default limits, and the default manifest.

This module imports nothing heavy (server start-up imports it through the spec): no runtime, no SDK.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from openenv_mcp.environment.tasks import Task
from openenv_mcp.models import Observation

__all__ = [
    "COMMON",
    "DEFAULT",
    "ClusterNeeds",
    "ContainerNeeds",
    "Declarations",
    "Miner",
    "Mining",
    "Normaliser",
    "Parity",
    "Recorded",
    "Rejected",
    "Rule",
    "Side",
    "Stage",
]

Rule = Callable[[str, Mapping[str, Any], Any], Any]
"""``rule(tool, arguments, value)``: a successful answer's structured content (or text) in the form compared."""


@dataclass(frozen=True, slots=True)
class Normaliser:
    """A normal form of answers: the common rules, then ``rule(tool, arguments, structured)`` for the rest.

    Two answers are *identical* when the observations are equal as sent, *equivalent* when they differ but their
    normal forms are equal, *different* otherwise. A normaliser forgives only what an agent cannot act on
    differently.

    Attributes:
        forgives: One line per difference forgiven, saying why (shown in the report and in docs/parity.md); start
            from :data:`COMMON`.
        rule: Maps a successful call's structured content (or text) further; the identity by default.
    """

    forgives: tuple[str, ...]
    rule: Rule = field(default=lambda tool, arguments, value: value)

    def __call__(self, tool: str, arguments: Mapping[str, Any], observation: Observation) -> Any:
        if observation.is_error:
            return {"error": True}
        value: Any = observation.structured_content
        if value is None:
            value = observation.text
        return self.rule(tool, arguments, _common(value))


def _common(value: Any) -> Any:
    """Whitespace runs collapsed in text; numbers as floats to 12 significant digits (so 2, 2.0 and a
    NUMERIC's 2.000000000000000001 agree)."""
    if isinstance(value, str):
        return " ".join(value.split())
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        return float(f"{value:.12g}") if math.isfinite(value) else value
    if isinstance(value, list):
        return [_common(item) for item in value]
    if isinstance(value, dict):
        return {key: _common(item) for key, item in value.items()}
    return value


COMMON = (
    "the wording of an error: both sides refused the call, each engine phrases it its own way, and no task grades "
    "an error's text",
    "runs of whitespace in text, and the last digits of a number past 12 significant ones (2, 2.0 and a NUMERIC's "
    "2.000000000000000001 are one value to an agent)",
)
"""What every normaliser forgives."""

DEFAULT = Normaliser(forgives=COMMON)
"""The normaliser of an environment that declares none of its own."""

Side = Callable[[str, dict[str, Any]], Awaitable[Any]]
"""``side(tool, arguments) -> structured content``: one call through the one path on one side of a parity run (the
sim episode's or the prod backend); a call that answers with an error raises, naming the side."""

Stage = Callable[[Side, Side], Awaitable[None]]
"""``stage(sim, prod)``: make the prod service hold the state the sim episode starts from, through the tools."""


@dataclass(frozen=True, kw_only=True)
class Parity:
    """How the environment's answers are compared sim against prod (``openenv-mcp parity``).

    Attributes:
        normaliser: What the comparison forgives, and why.
        compared: Whether a task starts from state the prod service holds (``None``: every task does); the others
            are left out of a run.
        not_compared: Why the tasks ``compared`` leaves out cannot be compared (shown in the report).
        stage: Makes prod hold each sim episode's start before its calls play (replacing the service's state);
            ``None``: prod is left as it is.
    """

    normaliser: Normaliser = DEFAULT
    compared: Callable[[Task], bool] | None = None
    not_compared: str = ""
    stage: Stage | None = None


class Rejected(Exception):
    """Raised by a miner: a session that makes no task, and why."""


@dataclass(frozen=True, slots=True)
class Recorded:
    """One recorded prod session, as a miner reads it (records as :mod:`openenv_mcp.trajectories.sessions` writes
    them: ``tool``, ``arguments``, ``is_error``, ``text``, ``structured_content``).

    Attributes:
        calls: The session's calls, in order.
        opening: The record of :attr:`Mining.opening`, made on the prod backend just before the session's first
            call: the state the session started from (``None`` when the environment declares no opening call, or
            the recording has none for this session).
    """

    calls: Sequence[Mapping[str, Any]]
    opening: Mapping[str, Any] | None = None


Miner = Callable[[Task, Recorded, str, str], tuple[Task, int]]
"""``miner(a task of the environment, the session, task id, prompt) -> (the task, reference length)``: the task a
recorded session becomes, graded from what prod answered, and how many of its first calls are its reference; raises
:class:`Rejected` saying why a session makes none."""


@dataclass(frozen=True, kw_only=True)
class Mining:
    """How a recorded prod session becomes a sim task (``openenv-mcp tasks mine``), or why it cannot.

    Attributes:
        miner: Makes the task (see :data:`Miner`); ``None``: the environment cannot be mined.
        why_not: Why it cannot be mined, when ``miner`` is ``None`` (what ``tasks mine`` answers).
        opening: A read-only call ``(tool, arguments)`` the session recorder makes on the prod backend when a
            session's first call arrives, so the recording holds the state the session started from (the miner
            reads it as :attr:`Recorded.opening`); ``None``: the recording holds the calls only.
    """

    miner: Miner | None = None
    why_not: str = "it declares no miner (Environment.declares.mining)"
    opening: tuple[str, Mapping[str, Any]] | None = None


@dataclass(frozen=True, kw_only=True)
class ContainerNeeds:
    """What a server needs from its container beyond the defaults (the image runs as a non-root user).

    Attributes:
        user: The user the server runs as (``None``: the image's, 10001); ``"root"`` for a server that drops to
            other uids itself.
        cap_add: Linux capabilities to add.
        security_opt: Security options (``apparmor=unconfined``).
        prod_environment: Variables set in prod (paths inside the container).
        prod_volumes: Named volumes mounted in prod, ``{volume: path}`` (Kubernetes: an ``emptyDir``).
        volume_owner: ``uid:gid`` owning the prod volumes: the image's directories give it to compose's named
            volumes; Kubernetes gets an init container that hands them over.
        target: The ``compose/Dockerfile`` target the server's image is built from: ``slim`` or ``display``
            (slim plus Xvfb, xdotool, Tk, a font).
        prod_mounts: Host paths bound into the prod container (``SOURCE:TARGET[:ro]``), each something the host
            must provide (docs/deploy.md).
        mount_environment: Variables that point the server at ``prod_mounts`` (compose only).
        system_packages: Debian packages its prod image must add to the target (e.g. ``nodejs`` for an upstream
            MCP server on npm); the stack lists them with the upstreams to install (``x-image-needs``).
        devices: Host devices the container needs (``/dev/kvm``; compose ``devices:``).
        memory_mb: The container's memory limit, in MiB.
        memory_reserved_mb: The memory it reserves (compose) or requests (Kubernetes), in MiB.
    """

    user: str | None = None
    cap_add: tuple[str, ...] = ()
    security_opt: tuple[str, ...] = ()
    prod_environment: Mapping[str, str] = field(default_factory=dict)
    prod_volumes: Mapping[str, str] = field(default_factory=dict)
    volume_owner: str | None = None
    target: str = "slim"
    prod_mounts: tuple[str, ...] = ()
    mount_environment: Mapping[str, str] = field(default_factory=dict)
    system_packages: tuple[str, ...] = ()
    devices: tuple[str, ...] = ()
    memory_mb: int = 1024
    memory_reserved_mb: int = 256


@dataclass(frozen=True, kw_only=True)
class ClusterNeeds:
    """What a Kubernetes manifest of the server needs beyond the defaults.

    Attributes:
        prod_replicas: At most this many prod replicas (``None``: as many as asked): one for a server whose prod
            state lives in one process or file.
        why: Why, in one sentence (an annotation on the Deployment).
        node_selector: Labels a node must carry to run the server (a display, a device).
    """

    prod_replicas: int | None = None
    why: str = ""
    node_selector: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Declarations:
    """Everything an environment declares for the toolkit, grouped: :attr:`Environment.declares
    <openenv_mcp.environment.spec.Environment.declares>`. Each part has defaults that fit an environment with no
    needs of its own."""

    parity: Parity = Parity()
    mining: Mining = Mining()
    container: ContainerNeeds = ContainerNeeds()
    cluster: ClusterNeeds = ClusterNeeds()
