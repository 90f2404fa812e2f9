"""`key=value` overrides of a training config: dotted names into the nested blocks, values parsed as YAML
(`ppo.lr=1e-4 sim.num_envs=32 total_frames=2e6`); an item of a list is named by its index
(`stages.1.ppo.lr=5e-5`). Habitat-baselines' names for the settings both have also work on the command
line (HABITAT_KEYS, habitat_to_navzoo). Other names for navzoo's settings (stable-baselines3's
`learning_rate`, `n_steps`, habitat's `num_processes`, ...) are not accepted: an unknown key's "did you
mean" suggests navzoo's key for them (navzoo.config_base.KEY_SYNONYMS, the one table of them)."""

from __future__ import annotations

import re
from typing import Any

import yaml

from navzoo.errors import ConfigError
from navzoo.typed_config import is_decimal

# habitat-baselines' keys (habitat-lab's habitat_baselines/config/default_structured_configs.py) for the
# settings navzoo has under its own name, where they mean the same: environments per worker, frames summed
# over the workers, updates between checkpoints and between log lines, DD-PPO's sync fraction, the W&B run,
# and PPO's fields of the same name. (checkpoint_folder is left out: navzoo's run folder holds more than
# checkpoints; so is ddppo.distrib_backend, whose values are spelt differently.)
_HABITAT_TOP = {
    "num_environments": "sim.num_envs",
    "total_num_steps": "total_frames",
    "checkpoint_interval": "checkpoint_every",
    "log_interval": "log_every",
}
_HABITAT_PPO = (
    "num_steps",
    "ppo_epoch",
    "num_mini_batch",
    "clip_param",
    "value_loss_coef",
    "entropy_coef",
    "use_clipped_value_loss",
    "gamma",
    "tau",
    "use_normalized_advantage",
    "lr",
    "eps",
    "max_grad_norm",
    "use_linear_lr_decay",
)
HABITAT_KEYS = {
    # The top-level ones also without their block, as habitat-baselines' flat configs wrote them.
    **_HABITAT_TOP,
    **{f"habitat_baselines.{key}": ours for key, ours in _HABITAT_TOP.items()},
    "habitat_baselines.rl.ddppo.sync_frac": "distributed.sync_frac",
    "habitat_baselines.wb.project_name": "wandb.project",
    "habitat_baselines.wb.entity": "wandb.entity",
    "habitat_baselines.wb.run_name": "wandb.name",
    "habitat_baselines.wb.group": "wandb.group",
    **{f"habitat_baselines.rl.ppo.{key}": f"ppo.{key}" for key in _HABITAT_PPO},
}


def habitat_to_navzoo(override: str) -> str:
    """`override` with a habitat-baselines key (HABITAT_KEYS) renamed to navzoo's; others as they are."""
    key, sep, value = override.partition("=")
    return f"{HABITAT_KEYS.get(key, key)}{sep}{value}"


def apply_override(data: dict[str, Any], item: str) -> None:
    """Set `a.b.c=value` in a nested dict; the value is parsed as YAML (numbers, lists, booleans)."""
    key, sep, raw = item.partition("=")
    if not sep or not key:
        raise ConfigError("override", item, "key=value, e.g. ppo.lr=1e-4 or sim.num_envs=32")
    *parents, leaf = key.split(".")
    node = data
    for position, name in enumerate(parents):
        # A list holds blocks named by their index, e.g. the stages: stages.1.ppo.lr=1e-4
        node = _list_item(node, name, item) if isinstance(node, list) else node.setdefault(name, {})
        if isinstance(node, list) and position == len(parents) - 1:
            raise ConfigError(
                "override",
                item,
                f"a key inside a block ({name!r} is a list: name an item, {name}.0.{leaf}=..., "
                f"or give the list, {name}=[...])",
            )
        if not isinstance(node, dict | list):
            raise ConfigError("override", item, f"a key inside a block ({name!r} is not one)")
    if not isinstance(node, dict):  # only the config itself is left to check: the loop refused the rest
        raise ConfigError("config", node, f"a mapping of fields, for the override {item!r} to set one in")
    try:
        node[leaf] = yaml.load(raw, Loader=YamlLoader)
    except yaml.YAMLError:
        node[leaf] = raw


class YamlLoader(yaml.SafeLoader):
    """Safe YAML that also reads 1e-4 and 1e7 as numbers (YAML 1.1 wants a dot and a signed exponent)."""


YamlLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:\d[\d_]*)?(?:\.\d*)?[eE][-+]?\d+$"),
    list("-+0123456789."),
)


def _list_item(items: list, index: str, item: str) -> Any:
    if not (is_decimal(index) and int(index) < len(items)):
        raise ConfigError("override", item, f"an index below {len(items)} where the key names a list item")
    return items[int(index)]
