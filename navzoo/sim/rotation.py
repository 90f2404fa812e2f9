"""Training scenes rotating through a scene pool's slots, for navzoo's own scenes (navzoo.sim.pool) and
scanned meshes (navzoo.sim.scans.scene_source) alike.

A pool holds `slots` scenes of an endless stream (its k-th scene, however the pool makes it). Every
`episodes_per_scene` episode starts, one slot retires: the slot of the stream's next scene (next_scene mod
slots) takes no new episodes, and once no environment is in it, it takes that scene, which a background
thread loaded while the slot drained. A pool of one slot never rotates: while it retired no environment
could start an episode. The counters are the rotation's state_dict, so a resumed run rotates as one that
never stopped.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar

import numpy as np
import torch

Scene = TypeVar("Scene")


class SceneRotation(Generic[Scene]):
    """`load(k)` makes the stream's k-th scene (on a background thread, ahead of need); `fill(slot, k,
    scene)` puts it in a slot (on the caller's thread). The slots start with scenes 0 .. slots - 1."""

    def __init__(
        self,
        slots: int,
        episodes_per_scene: int,
        rotating: bool,
        load: Callable[[int], Scene],
        fill: Callable[[int, int, Scene], None],
    ):
        self.slots, self.episodes_per_scene, self.rotating = slots, episodes_per_scene, rotating
        self._load, self._fill = load, fill
        self.slot_scene = [-1] * slots  # index k in the stream of each slot's scene
        for slot in range(slots):
            self._put(slot, slot, load(slot))
        self.next_scene = slots
        self.retiring = -1  # the slot that takes no new episodes until its last one ends
        self.episodes_since_retire = 0
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="navzoo-scenes") if rotating else None
        self._pending: Future[Scene] | None = None
        self._prefetch()

    def active_slots(self) -> np.ndarray:
        """The slots that take new episodes."""
        slots = np.arange(self.slots)
        return slots[slots != self.retiring]

    def note_episodes_started(self, count: int, slots_in_use: torch.Tensor) -> None:
        """`count` episodes started; `slots_in_use` [N] holds every environment's slot now."""
        if not self.rotating:
            return
        self.episodes_since_retire += count
        if self.retiring < 0 and self.episodes_since_retire >= self.episodes_per_scene:
            self.retiring = self.next_scene % self.slots
            self.episodes_since_retire = 0
        if self.retiring >= 0 and not bool((slots_in_use == self.retiring).any()):
            assert self._pending is not None  # a rotating stream always has the next scene on its way
            self._put(self.retiring, self.next_scene, self._pending.result())
            self.next_scene += 1
            self.retiring = -1
            self._prefetch()

    def state_dict(self) -> dict:
        return {
            "slot_scene": list(self.slot_scene),
            "next_scene": self.next_scene,
            "retiring": self.retiring,
            "episodes_since_retire": self.episodes_since_retire,
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore `state_dict()`: the slots whose scene differs are filled again, here and now, and the
        scene after them is loaded ahead again."""
        for slot, k in enumerate(state["slot_scene"]):
            if self.slot_scene[slot] != k:
                self._put(slot, int(k), self._load(int(k)))
        self.next_scene = int(state["next_scene"])
        self.retiring = int(state["retiring"])
        self.episodes_since_retire = int(state["episodes_since_retire"])
        if self._pending is not None:
            self._pending.cancel()  # it may be for another scene; if already running, its result goes unread
        self._prefetch()

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None

    def _put(self, slot: int, k: int, scene: Scene) -> None:
        self._fill(slot, k, scene)
        self.slot_scene[slot] = k

    def _prefetch(self) -> None:
        if self._executor is not None:
            self._pending = self._executor.submit(self._load, self.next_scene)
