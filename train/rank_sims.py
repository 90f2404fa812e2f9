"""Each worker's simulator in each stage of a run: the run's `sim` block as the stage changes it, with the
worker's rank_sim_overrides and a seed of its own (TrainConfig.sim_for_rank)."""

from __future__ import annotations

from typing import Any

from navzoo.errors import ConfigError
from navzoo.sim.config import SimConfig
from navzoo.sim.scenes import stable_seed
from navzoo.train.stage_config import STAGE_SIM_FIELDS, StageConfig


def rank_sim(
    sim: SimConfig,
    stages: tuple[StageConfig, ...],
    rank_sim_overrides: dict[int, dict[str, Any]],
    seed: int,
    rank: int,
    stage: int,
    sensors: tuple[str, ...],
) -> SimConfig:
    """Worker `rank`'s simulator in stage `stage` (0 the first, i the run's stages[i - 1]) with its own seed
    (so its own scene stream) and `sensors` (the policy's and the teacher's cameras), unless its overrides
    set them. A stage that leaves the simulator as the stage before had it gets the same config, so its
    environments go on; one that changes it gets a seed of its own, so its episodes are not the first
    stage's drawn again."""
    config, changes = stage_sim(sim, stages, rank_sim_overrides, rank, stage)
    first = stage  # the stage since which this simulator holds
    while first and stage_sim(sim, stages, rank_sim_overrides, rank, first - 1)[0] == config:
        first -= 1
    rank_seed = seed * 1000 + rank if first == 0 else stable_seed("stage", seed, rank, first) & 0x7FFFFFFF
    defaults = {"seed": rank_seed, "sensors": sensors}
    return config.replace(**{key: value for key, value in defaults.items() if key not in changes})


def stage_sim(
    sim: SimConfig,
    stages: tuple[StageConfig, ...],
    rank_sim_overrides: dict[int, dict[str, Any]],
    rank: int,
    stage: int,
) -> tuple[SimConfig, dict[str, Any]]:
    """Worker `rank`'s simulator in stage `stage` before its seed and cameras are added (the `sim` block as
    the stage changes it, with the rank's overrides), and those overrides."""
    config = sim.replace(**stages[stage - 1].sim) if stage else sim
    changes = rank_sim_overrides.get(rank, {})
    block, where = "rank_sim_overrides", f" (in stage stages.{stage - 1})" if stage else ""
    stage_overrides = stages[stage - 1].rank_sim_overrides if stage else None
    if stage_overrides is not None:
        # The stage's overrides stand for the scene stream of the run's; the rest of a worker's holds.
        kept = {key: value for key, value in changes.items() if key not in STAGE_SIM_FIELDS}
        changes = {**kept, **stage_overrides.get(rank, {})}
        block, where = f"stages.{stage - 1}.rank_sim_overrides", ""
    try:
        return config.replace(**changes), changes
    except TypeError:
        raise ConfigError(block, changes, "SimConfig fields") from None
    except ConfigError as err:
        raise ConfigError(f"{block}.{rank}.{err.field}", err.value, err.allowed + where) from None


def overridden_ranks(
    rank_sim_overrides: dict[int, dict[str, Any]], stages: tuple[StageConfig, ...]
) -> set[int]:
    """The workers that the run's or a stage's rank_sim_overrides name."""
    in_stages = [stage.rank_sim_overrides or {} for stage in stages]
    return {rank for overrides in (rank_sim_overrides, *in_stages) for rank in overrides}
