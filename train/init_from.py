"""Starting a run from the weights of another model (TrainConfig.init_from), and the record of what those
weights had learnt before, which the run's checkpoints and exported model keep."""

from __future__ import annotations

from typing import Any

from navzoo.errors import ConfigError
from navzoo.models import ActorCritic, PointNavPolicy
from navzoo.models.add_seen_map import add_seen_map
from navzoo.names import SEEN_MAP
from navzoo.train.config_blocks import TEACHER_ALGORITHMS
from navzoo.train.stage_config import recipe_algorithms
from navzoo.zoo.loader import load


def initialise_from(policy: ActorCritic, source: str) -> dict[str, Any]:
    """Load the weights of `source` into `policy`, which must have that model's architecture, or that
    model's with the seen_map sensor added (the map's new inputs then start at zero); returns the record of
    where they came from."""
    model = load(source)
    # A PointGoal source without the map grows into this run's PointGoal policy that reads it (add_seen_map).
    grown = _grown_by_seen_map(policy, model)
    adds_seen_map = grown is not None
    expected = grown.config.without_seen_map() if grown is not None else policy.config
    if model.config != expected:
        mine, theirs = expected.to_dict(), model.config.to_dict()
        changed = [f"{k}: {theirs.get(k)!r} there, {v!r} here" for k, v in mine.items() if v != theirs.get(k)]
        raise ConfigError(
            "init_from",
            source,
            f"a model of this run's architecture (or of this run's without {SEEN_MAP}); it differs in "
            f"{', '.join(changed)}. Set model, policy and sim (sensors, resolution) as that model was "
            "trained",
        )
    policy.load_state_dict(add_seen_map(model, grown) if grown is not None else model.state_dict())
    # What the weights had learnt before this run, for the model card: the recipe, stage by stage.
    before = model.provenance or {}
    config = before.get("train_config") or {}
    imitated = any(algorithm in TEACHER_ALGORITHMS for algorithm in recipe_algorithms(config))
    # The source's own training config and stages go along: a transfer from this run's model trains
    # with the hyper-parameters of the run that built it from scratch (navzoo.transfer.config).
    return {
        "source": source,
        "algorithm": config.get("algorithm"),
        **({"teacher": (config.get("imitation") or {}).get("teacher")} if imitated else {}),
        "frames": before.get("frames"),
        "wall_time_s": before.get("wall_time_s"),
        **({"train_config": config} if config else {}),
        **({"stages": before["stages"]} if "stages" in before else {}),
        **({"added_inputs": [SEEN_MAP]} if adds_seen_map else {}),
        **({"initialised_from": before["initialised_from"]} if "initialised_from" in before else {}),
    }


def _grown_by_seen_map(policy: ActorCritic, source: ActorCritic) -> PointNavPolicy | None:
    """`policy` where it is a PointGoal policy that reads the seen_map sensor and `source` the same kind of
    policy without it; else None (only a PointGoal policy has the map)."""
    if (
        isinstance(policy, PointNavPolicy)
        and isinstance(source, PointNavPolicy)
        and policy.config.has_seen_map
        and not source.config.has_seen_map
    ):
        return policy
    return None
