"""The garbage collector's settings while runtimes serve in this process (see :class:`Collector`)."""

from __future__ import annotations

import gc
from typing import ClassVar

__all__ = ["Collector"]

_GC_YOUNG = 7_000  # the collector's youngest-generation threshold while serving


class Collector:
    """The garbage collector while runtimes serve in this process. Its settings are the process's, so the first
    runtime to start tunes them and the last to stop gives them back (tests and Ray replicas host several).

    - Everything alive at a start (modules, the app, schemas, the tool table) lives as long as the server: it is
      frozen, out of the collector's sight, so that the collections the step path's short-lived objects trigger
      stop re-scanning it (measured: batched steps over ``/ws`` went from 25 to 18 us of server CPU).
    - The youngest generation holds ten times CPython's default (700 objects): a batch of steps keeps about a
      thousand objects alive until its answer is sent, so the default collects (and scans them) several times
      per batch: 5% of a batched step's instructions, about none at this threshold (callgrind, bench/README.md).
    - A server process collects nothing while it starts (:meth:`hold`, until :meth:`settle`): a start builds a
      heap of objects that live as long as the server (modules, schemas, the app; 165,000 in the sql server) and
      little garbage (1,650 objects, frozen with the rest), and every full collection on the way re-scanned all
      of them: a tenth of a start's CPU (bench/README.md).
    """

    serving: ClassVar[set[int]] = set()  # ids of the runtimes serving now (each once, however often started)
    threshold: ClassVar[tuple[int, ...]] = ()

    @classmethod
    def started(cls, owner: object) -> None:
        """``owner`` (a runtime) serves from now on."""
        gc.freeze()
        if not cls.serving:
            cls.threshold = gc.get_threshold()
            gc.set_threshold(_GC_YOUNG, *cls.threshold[1:])
        cls.serving.add(id(owner))

    @staticmethod
    def hold() -> None:
        """A server process starts: no collections until :meth:`settle`."""
        gc.disable()

    @staticmethod
    def settle() -> None:
        """The server is up (its last import done): freeze what the start built, and collect again."""
        gc.freeze()
        gc.enable()

    @classmethod
    def stopped(cls, owner: object) -> None:
        """``owner`` stopped serving; the last one to stop gives the collector its settings back."""
        if id(owner) not in cls.serving:
            return
        cls.serving.discard(id(owner))
        if not cls.serving:
            gc.unfreeze()  # what the starts froze becomes collectable again
            gc.set_threshold(*cls.threshold)
