"""A policy as an evaluation agent, and the simulator settings (task, cameras) a policy needs.

The agent keeps what a recurrent policy carries between steps (hidden state, previous actions) and resets
it where an episode begins, as habitat-baselines' evaluation loop does. A sampled action is the inverse CDF
of the policy's action distribution at one uniform draw. Under `evaluate` the draw is keyed on the agent's
seed, the episode and the step (navzoo.agents.draws.keyed_uniform), so an episode's actions do not depend on
which environment runs it or on how many there are; called without keys, the agent draws from its own
seeded generator. Either way an evaluation is reproducible whatever else draws random numbers.
"""

from contextlib import contextmanager

import torch

from navzoo.agents.draws import keyed_uniform
from navzoo.errors import ConfigError
from navzoo.models import ActorCritic, PolicyArchitecture, PolicyConfig
from navzoo.names import SEEN_MAP
from navzoo.sim.config import SimConfig
from navzoo.tasks import get_task


class PolicyAgent:
    """Runs `policy` on N environments: `act(obs, first) -> actions [N]` (see navzoo.evaluation).

    `policy` is any navzoo policy (a PointNavPolicy or the neural controller). After each `act`,
    `last_value` [N] and `last_action_probs` [N, A] hold the value estimate and the action distribution
    for the observations just acted on.
    """

    def __init__(self, policy: ActorCritic, num_envs: int, deterministic: bool = False, seed: int = 0):
        self.policy = policy
        self.name = policy.name or "policy"
        self.deterministic = deterministic
        self.device = next(policy.parameters()).device
        self.hidden = policy.initial_state(num_envs, self.device)
        self.prev_actions = torch.zeros(num_envs, dtype=torch.long, device=self.device)
        self.seed = seed
        self.generator = torch.Generator(device=self.device).manual_seed(seed)
        self.last_value: torch.Tensor | None = None
        self.last_action_probs: torch.Tensor | None = None

    @property
    def mode(self) -> str:
        return "deterministic" if self.deterministic else "sampled"

    def act(
        self, obs: dict[str, torch.Tensor], first: torch.Tensor, keys: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Actions [N] on `first`'s device; `first` [N] marks episodes that just began (state is reset).
        `keys` [N, 2] (episode key, step within the episode; `evaluate` passes them) key the draws of
        sampled actions; without them the draws come from the agent's generator."""
        obs = {k: v.to(self.device) for k, v in obs.items()}
        masks = ~first.to(self.device)
        with torch.inference_mode(), _eval_mode(self.policy):
            out = self.policy(obs, self.hidden, self.prev_actions, masks)
            probs = out.distribution.probs
            if self.deterministic:
                actions = probs.argmax(-1)
            else:
                actions = inverse_cdf(probs, self._draws(keys, len(probs)))
        self.hidden, self.prev_actions = out.hidden, actions
        self.last_value, self.last_action_probs = out.value, probs
        return actions.to(first.device)

    def _draws(self, keys: torch.Tensor | None, count: int) -> torch.Tensor:
        """One uniform draw in [0, 1) per environment: keyed on (seed, episode, step) when keys are given."""
        if keys is None:
            return torch.rand(count, generator=self.generator, device=self.device, dtype=torch.float64)
        return keyed_uniform(self.seed, keys.to(self.device))

    def describe(self) -> dict:
        """The model, for reports and replays: its name, task, architecture and provenance."""
        return {
            "name": self.policy.name,
            "task": self.policy.task,
            "architecture": self.policy.config.to_dict(),
            "provenance": self.policy.provenance,
        }


def inverse_cdf(probs: torch.Tensor, uniform: torch.Tensor) -> torch.Tensor:
    """The action [N] whose cumulative-probability interval holds each draw of `uniform` [N] in [0, 1):
    distributed as `probs` [N, A], and never an action of probability 0."""
    cdf = probs.double().cumsum(-1)
    # Scaled by the total, which rounding keeps from being exactly 1, so the draw always falls inside.
    return torch.searchsorted(cdf, (uniform * cdf[:, -1])[:, None], right=True).squeeze(1)


@contextmanager
def _eval_mode(module: torch.nn.Module):
    """Eval mode while evaluating (no updates of RGB running statistics); a training policy is restored."""
    training = module.training
    if training:
        module.eval()
    try:
        yield
    finally:
        if training:
            module.train()


def sim_settings(config: PolicyArchitecture) -> dict:
    """The SimConfig fields a policy fixes: the cameras it reads and, unless it is blind, their size, and
    the seen_map sensor's size where it reads that."""
    if config.is_blind:
        return {"sensors": ()}
    assert config.resolution is not None  # a policy with cameras has their size
    settings = {"sensors": config.visual_sensors, "resolution": tuple(config.resolution)}
    if SEEN_MAP in config.sensors:
        settings.update(_seen_map_settings(config), sensors=(*config.visual_sensors, SEEN_MAP))
    return settings


def _seen_map_settings(config: PolicyArchitecture) -> dict:
    assert isinstance(config, PolicyConfig)  # the one architecture that reads a seen_map
    return {"seen_map_size": config.seen_map_size, "seen_map_cell": config.seen_map_cell}


def check_sim_config(
    config: PolicyArchitecture, sim_config: SimConfig, label: str = "the model", task: str = "pointnav"
) -> None:
    """Raise ConfigError, saying how to fix it, unless the simulator runs the policy's `task` and renders
    what the policy reads."""
    if sim_config.task != task:
        name = get_task(task).label
        raise ConfigError(
            "task",
            sim_config.task,
            f"{task!r}: {label} is a {name} policy; evaluate it on task {task!r}, or leave the task unset "
            "and name this model first",
        )
    rendered = sim_settings(config).get("sensors", ())
    missing = [s for s in rendered if s not in sim_config.sensors]
    if missing:
        wanted = " ".join(rendered)
        raise ConfigError(
            "sensors",
            sim_config.sensors,
            f"sensors including {', '.join(missing)}: {label} reads {wanted}; give sensors {wanted}, or "
            "leave the sensors unset to use the model's own",
        )
    resolution = config.resolution  # None without cameras
    if resolution is not None and tuple(resolution) != sim_config.resolution:
        h, w = resolution
        raise ConfigError(
            "resolution",
            sim_config.resolution,
            f"({h}, {w}): {label} expects {' '.join(config.visual_sensors)} images of {h}x{w}; give that "
            "resolution, or leave the resolution unset to use the model's own",
        )
    if SEEN_MAP in config.sensors:
        for name, value in _seen_map_settings(config).items():
            if getattr(sim_config, name) != value:
                raise ConfigError(
                    name, getattr(sim_config, name), f"{value}: {label} reads a {SEEN_MAP} of that"
                )
