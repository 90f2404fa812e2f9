"""The base of navzoo's frozen config dataclasses: reading them from plain data and writing them back.

Configs come from YAML presets, `key=value` overrides, config.json files and replays. `Config.from_dict`
refuses a key the config does not have (suggesting the closest field, since the usual cause is a typo, or
navzoo's key for a setting other libraries name differently: KEY_SYNONYMS) and builds nested configs from
their mappings; `to_dict` writes what YAML and JSON can hold (nested configs as mappings, tuples as lists),
so `from_dict(to_dict())` gives the config back. Values are checked by each
config's __post_init__ (navzoo.typed_config), not here.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from typing import Any, ClassVar, Self

from navzoo.errors import ConfigError, closest

# Other libraries' names for navzoo's settings, for the "did you mean" of an unknown key (check_keys): the
# name, then navzoo's key in a training config (train/config.py's TrainConfig; the block, a dot, the field),
# where the two mean the same. Suggestions only: an unknown key stays an error. (The habitat-baselines names
# a training config also accepts as they are, train/overrides.py's HABITAT_KEYS, never get here.)
KEY_SYNONYMS: dict[str, str] = {
    # stable-baselines3's PPO and make_vec_env
    "learning_rate": "ppo.lr",
    "n_steps": "ppo.num_steps",
    "n_epochs": "ppo.ppo_epoch",
    "gae_lambda": "ppo.tau",
    "ent_coef": "ppo.entropy_coef",
    "vf_coef": "ppo.value_loss_coef",
    "clip_range": "ppo.clip_param",
    "normalize_advantage": "ppo.use_normalized_advantage",
    "max_grad_norm": "ppo.max_grad_norm",
    "gamma": "ppo.gamma",
    "batch_size": "ppo.num_mini_batch",  # KEY_NOTES: a count of mini-batches, not their size
    "total_timesteps": "total_frames",
    "n_envs": "sim.num_envs",
    # habitat-baselines (its PPO fields are navzoo's, in the ppo block) and its older NUM_PROCESSES
    "num_processes": "sim.num_envs",
    "num_environments": "sim.num_envs",
    "total_num_steps": "total_frames",
    "num_steps": "ppo.num_steps",
    "ppo_epoch": "ppo.ppo_epoch",
    "num_mini_batch": "ppo.num_mini_batch",
    "entropy_coef": "ppo.entropy_coef",
    "value_loss_coef": "ppo.value_loss_coef",
    "clip_param": "ppo.clip_param",
    "tau": "ppo.tau",
    "checkpoint_interval": "checkpoint_every",
    "log_interval": "log_every",
    # common habits
    "lr": "ppo.lr",
    "epochs": "ppo.ppo_epoch",
    "num_envs": "sim.num_envs",
    "frames": "total_frames",
    "threads": "torch_threads",
}
# What a suggestion does not say by its name alone.
KEY_NOTES = {"batch_size": "navzoo sets how many mini-batches an epoch has, not their size"}
# The blocks of a training config: a synonym in one may point into another (`ppo.n_envs`: `sim.num_envs`).
TRAINING_BLOCKS = ("ppo", "sim", "imitation", "distributed", "wandb", "policy")


class Config:
    """Mixin of a frozen config dataclass: from_dict, to_dict and replace."""

    # What @dataclass gives each subclass (and what the dataclasses functions below need).
    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    @classmethod
    def from_dict(cls, data: Any, block: str = "") -> Self:
        """The config whose fields `data` sets; a nested config's field may hold a mapping of its fields.

        `block` is where `data` sits in its document, e.g. "sim" in a training config: a wrong key is then
        named "sim.<key>". Empty for the top level of a document.
        """
        check_keys(cls, data, block)
        values = dict(data)
        for name, kind in _nested_configs(cls).items():
            if name in values and not isinstance(values[name], kind):
                values[name] = kind.from_dict(values[name], _key(block, name))
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        """The fields in declaration order, as YAML and JSON hold them: nested configs as mappings, tuples
        as lists."""
        return {field.name: _plain(getattr(self, field.name)) for field in dataclasses.fields(self)}

    def replace(self, **changes: Any) -> Self:
        """A copy with `changes`, checked as a new config is; TypeError for a name that is not a field."""
        return dataclasses.replace(self, **changes)


def check_keys(kind: type, data: Any, block: str = "") -> None:
    """ConfigError unless `data` is a mapping that sets only fields of the dataclass `kind`, and every
    field without a default. `block` names the mapping, as in Config.from_dict."""
    if not isinstance(data, dict):
        raise ConfigError(block or "config", data, f"a mapping of {kind.__name__} fields")
    known = [field.name for field in dataclasses.fields(kind)]
    listed = f"fields of {kind.__name__}: {', '.join(sorted(known))}"
    unknown = sorted(set(data) - set(known), key=str)
    if unknown:
        key = unknown[0]
        suggestion, note = suggest_key(str(key), known, block)
        allowed = f"{listed} ({note})" if note else listed
        raise ConfigError(_key(block, key), data[key], allowed, suggestion=suggestion)
    missing = [name for name in _required(kind) if name not in data]
    if missing:
        raise ConfigError(
            block or "config", sorted(data, key=str), f"a mapping that sets {missing[0]} ({listed})"
        )


def suggest_key(key: str, known: list[str], block: str = "") -> tuple[str | None, str | None]:
    """The key an unknown `key` of `block` most likely meant, and a note where the name alone misleads.

    The closest of the block's fields (`known`) and of KEY_SYNONYMS' names, so that a typo of either counts
    (`ppo.learning_rat` as `learning_rate`). A field of the block is named as the block names it (`lr`); a
    synonym by navzoo's whole key (`ppo.lr`, `sim.num_envs`), as typed on the command line, or by its field
    where a config is read on its own (`num_envs` for a SimConfig).
    """
    if key in KEY_SYNONYMS:
        meant = key
    else:
        meant = closest(key, [*known, *(name for name in KEY_SYNONYMS if name not in known)])
        if meant is None or meant in known:
            return meant, None
    target = _synonym_target(KEY_SYNONYMS[meant], known, block)
    if target is None:  # a synonym of a setting this config does not have: the closest field, if any
        return closest(key, known), None
    return target, KEY_NOTES.get(meant)


def _synonym_target(target: str, known: list[str], block: str) -> str | None:
    """navzoo's key `target` (a training config's) as the reader of `block` would type it, or None where
    `block` is a config of its own that has no such setting."""
    parent, _, leaf = target.rpartition(".")
    in_its_block = block == parent or block.endswith(f".{parent}")
    if leaf in known and (in_its_block or not block):
        return _key(block, leaf) if in_its_block else leaf
    if block.rpartition(".")[2] in TRAINING_BLOCKS or (not block and target.split(".")[0] in known):
        return target  # within a training config: its whole key
    return None


def one_of(name: str, value: Any, allowed: tuple) -> None:
    """ConfigError naming `name` unless `value` is one of `allowed`."""
    if value not in allowed:
        raise ConfigError(name, value, allowed)


def _key(block: str, key: object) -> str:
    return f"{block}.{key}" if block else str(key)


def _required(kind: type) -> list[str]:
    missing = dataclasses.MISSING
    return [
        field.name
        for field in dataclasses.fields(kind)
        if field.init and field.default is missing and field.default_factory is missing
    ]


@functools.cache
def _nested_configs(kind: type) -> dict[str, type[Config]]:
    """The fields of `kind` annotated with a config class."""
    hints = typing.get_type_hints(kind)
    return {
        field.name: hints[field.name]
        for field in dataclasses.fields(kind)
        if isinstance(hints[field.name], type) and issubclass(hints[field.name], Config)
    }


def _plain(value: Any) -> Any:
    if isinstance(value, Config):
        return value.to_dict()
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value
