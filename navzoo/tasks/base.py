"""What every task is made of: the Task base class, and the evaluation columns and card text they share.

A Task names itself (`name` in configs, `label` on pages and in tables), says whether it has a goal (the
GPS+Compass sensor; the goal-steering baselines and imitation need one), and carries what everything else
asks of it: the simulator's episode start, reward and metrics (navzoo.sim.task.SimTask: `begin`, `step`,
`observations`), the metrics evaluation reports and ranks by, the episode statistics training logs, and
what a model card says.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from navzoo.sim.task import SimTask

if TYPE_CHECKING:
    import torch

    from navzoo.sim.batch_sim import BatchSim

ACTIONS_TEXT = "stop, move forward 0.25 m, turn left 10° or turn right 10°"


@dataclass(frozen=True)
class Column:
    """A column of the evaluation table: header, summary key, width and number format."""

    header: str
    key: str
    width: int
    fmt: str


@dataclass(frozen=True)
class CardText:
    """How a model card names a task and its results."""

    tag: str
    task_name: str  # the model-index task_name
    dataset: str  # in the model-index dataset name
    purpose: str  # what the policy does, for the card's first paragraph
    map_shows: str  # what the video's top-down map draws besides the agent


MOTION_COLUMNS = (
    Column("path length", "path_length", 11, ".2f"),
    Column("collisions", "collisions", 10, ".1f"),
    Column("steps", "num_steps", 7, ".1f"),
)


class Task(SimTask["BatchSim"]):
    name: str
    label: str
    gym_id: str  # registered with gymnasium as navzoo/<gym_id>-v0
    has_goal: bool
    # The metrics evaluation reports with a 95% interval, the first ranking agents, with their labels.
    metrics: tuple[tuple[str, str], ...]
    # Per-episode metrics evaluation keeps (EpisodeResult fields) and training logs (episode/<name>).
    episode_fields: tuple[str, ...]
    training_metrics: tuple[str, ...]
    columns: tuple[Column, ...]  # navzoo eval's table
    # One episode's metrics in words (replays, the demo): (key, label, format).
    headline: tuple[tuple[str, str, str], ...]
    card: CardText

    @property
    def primary_metric(self) -> str:
        return self.metrics[0][0]

    def metric_label(self, key: str) -> str:
        return dict(self.metrics)[key]

    def outcome(self, episode: dict) -> str:
        """One evaluated episode's result in words, for a card's video."""
        raise NotImplementedError

    # --- the simulator's side: defaults for a task that keeps no tensors and adds no sensor -------------
    state_tensors: tuple[str, ...] = ()
    starts_at_field_source: bool = False

    def allocate(self, sim: BatchSim) -> None:
        pass

    def observations(self, sim: BatchSim, envs: torch.Tensor | slice) -> dict[str, torch.Tensor]:
        return {}
