"""The PointGoal actor-critic of DD-PPO, parameter-compatible with habitat-baselines' PointNavResNetPolicy.

    net.visual_encoder   observations -> feature map (navzoo.models.encoder)
    net.visual_fc        Flatten, Linear(C*h*w, hidden), ReLU
    net.map_encoder      the seen_map sensor's CNN (navzoo.models.map_encoder), only where it is read
    net.tgt_embeding     Linear(3, 32) on [rho, cos(-phi), sin(-phi)]   (habitat's spelling)
    net.prev_action_embedding   Embedding(num_actions + 1, 32), index 0 = start of an episode
    net.state_encoder    LSTM/GRU over [visual, map, goal, previous action]
    action_distribution.linear, critic.fc   heads on the recurrent output

With `PolicyConfig.net="baseline"` the core is PointNavBaselineNet's instead: no goal or previous-action
embedding, one GRU layer over [visual, rho, phi] (the GPS+Compass reading as it comes, or a dummy goal, or
no goal for goal-free tasks).

Conventions (one step, N environments): observations are the simulator's dict ("depth" [N,H,W,1] float,
"rgb" [N,H,W,3] uint8, "seen_map" [N,S,S,2] float, "pointgoal_with_gps_compass" [N,2] float), `hidden`
is [N, R, hidden_size] (`initial_state`), `prev_actions` [N] integer, `masks` [N] bool with False where an
episode has just started (the state is reset and the previous action becomes the start token). Sequences
for PPO add a leading time axis: [T, N, ...].

`ActorCritic` holds what every navzoo policy shares on top of its forward(): acting, evaluating actions
for PPO, the initial state and input checks; navzoo.models.neural_controller builds on it too. Both
implement navzoo.models.interface.NavigationPolicy.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Self

import torch
from torch import nn
from torch.distributions import Categorical

from navzoo.errors import ConfigError, ObservationError, WeightsFormatError
from navzoo.models import weights
from navzoo.models.configuration import GOAL_SENSOR, SENSOR_CHANNELS, PolicyConfig
from navzoo.models.encoder import VisualEncoder
from navzoo.models.hub_mixin import PolicyHubMixin
from navzoo.models.map_encoder import EMBEDDING_SIZE as MAP_EMBEDDING_SIZE
from navzoo.models.map_encoder import SeenMapEncoder
from navzoo.models.metadata import ModelMetadata
from navzoo.models.model_memory import measure, refuse_unless_model_fits
from navzoo.models.outputs import ActResult, EvaluateResult, PolicyOutput
from navzoo.models.state_encoder import RNNStateEncoder
from navzoo.models.weights import ModelConfig
from navzoo.names import SEEN_MAP, SEEN_MAP_CHANNELS

# Precomputed output of the visual encoder may be passed under this key instead of images (habitat's name).
VISUAL_FEATURES_KEY = "visual_features"
# The goal embedding's input [rho, cos(-phi), sin(-phi)] may be passed directly under this key (a planner's
# goal in the neural-controller setting), instead of being computed from the GPS+Compass reading.
GOAL_VECTOR_KEY = "goal_vector"


class CategoricalNet(nn.Module):
    def __init__(self, num_inputs: int, num_outputs: int):
        super().__init__()
        self.linear = nn.Linear(num_inputs, num_outputs)
        nn.init.orthogonal_(self.linear.weight, gain=0.01)
        nn.init.zeros_(self.linear.bias)

    def forward(self, x: torch.Tensor) -> Categorical:
        # float(): the action distribution stays in full precision under autocast, as in habitat and BPS.
        return Categorical(logits=self.linear(x).float(), validate_args=False)


class CriticHead(nn.Module):
    def __init__(self, num_inputs: int):
        super().__init__()
        self.fc = nn.Linear(num_inputs, 1)
        nn.init.orthogonal_(self.fc.weight)
        nn.init.zeros_(self.fc.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x).squeeze(-1)


class PointNavNet(nn.Module):
    dummy_goal: torch.Tensor  # a buffer, registered in __init__

    def __init__(self, config: PolicyConfig, fetch_timm_weights: bool = True):
        super().__init__()
        rnn_input = 32
        self.visual_encoder = self.visual_fc = self.tgt_embeding = None
        if not config.is_blind:
            self.visual_encoder = VisualEncoder(config, fetch_timm_weights)
            self.visual_fc = nn.Sequential(
                nn.Flatten(), nn.Linear(self.visual_encoder.output_size, config.hidden_size), nn.ReLU(True)
            )
            rnn_input += config.hidden_size
        self.map_encoder = None
        # Where the map's embedding enters the recurrent core's input (navzoo.models.map_encoder's
        # add_seen_map grows a policy without the map into one with it there).
        self.seen_map_columns: slice | None = None
        if config.has_seen_map:
            assert config.seen_map_size is not None  # PolicyConfig.validate checks it with the sensor
            self.map_encoder = SeenMapEncoder(config.seen_map_size)
            # forward() puts it right after the camera's embedding
            self.seen_map_columns = slice(config.hidden_size, config.hidden_size + MAP_EMBEDDING_SIZE)
            rnn_input += MAP_EMBEDDING_SIZE
        # PointNavBaselineNet reads the goal raw, (rho, phi), and no previous action (PolicyConfig.net).
        baseline = config.net == "baseline"
        self.raw_goal = baseline and config.has_goal_embedding
        if baseline:
            rnn_input -= 32  # no previous action's embedding
            rnn_input += 2 if self.raw_goal else 0
        elif config.has_goal_embedding:
            self.tgt_embeding = nn.Linear(3, 32)
            rnn_input += 32
        # Not saved: the dummy goal comes from the config, so the state dict stays habitat's.
        dummy = config.dummy_goal or (0.0, 0.0)
        self.register_buffer("dummy_goal", torch.tensor([dummy], dtype=torch.float32), persistent=False)
        self.uses_dummy_goal = config.dummy_goal is not None
        self.prev_action_embedding = None if baseline else nn.Embedding(config.num_actions + 1, 32)
        self.state_encoder = RNNStateEncoder(
            rnn_input, config.hidden_size, config.num_recurrent_layers, config.rnn_type
        )

    def forward(
        self,
        observations: dict[str, torch.Tensor],
        hidden: torch.Tensor,
        prev_actions: torch.Tensor,
        masks: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """Observations flattened to [T*N, ...]; prev_actions and masks [T, N]. Returns the recurrent output
        [T, N, H], the state, and the visual embedding [T*N, hidden] (None for a blind policy)."""
        inputs = []
        embedding = None
        if self.visual_encoder is not None:
            visual = observations.get(VISUAL_FEATURES_KEY)
            if visual is None:
                visual = self.visual_encoder(observations)
            assert self.visual_fc is not None  # built with the visual encoder
            embedding = self.visual_fc(visual)
            inputs.append(embedding)
        if self.map_encoder is not None:
            inputs.append(self.map_encoder(observations[SEEN_MAP]))
        if self.raw_goal:
            inputs.append(self._raw_goal(observations, masks.numel()))
        if self.tgt_embeding is not None:
            inputs.append(self.tgt_embeding(self._goal_vector(observations, masks.numel())))
        if self.prev_action_embedding is not None:
            start = torch.zeros_like(prev_actions)
            inputs.append(self.prev_action_embedding(torch.where(masks, prev_actions + 1, start).flatten()))
        x = torch.cat(inputs, dim=1).view(*masks.shape, -1)
        return (*self.state_encoder(x, hidden, masks), embedding)

    @property
    def has_goal_input(self) -> bool:
        """Whether the recurrent core reads a goal (embedded, or raw as PointNavBaselineNet's)."""
        return self.tgt_embeding is not None or self.raw_goal

    def _raw_goal(self, observations: dict[str, torch.Tensor], count: int) -> torch.Tensor:
        """[count, 2] (rho, phi) as PointNavBaselineNet reads it: the sensor's, the dummy goal, or a goal
        vector [rho, cos(-phi), sin(-phi)] turned back into its angle."""
        if GOAL_VECTOR_KEY in observations:
            vector = observations[GOAL_VECTOR_KEY]
            return torch.stack([vector[:, 0], -torch.atan2(vector[:, 2], vector[:, 1])], -1)
        if self.uses_dummy_goal:
            return self.dummy_goal.expand(count, 2)
        return observations[GOAL_SENSOR].float()

    def _goal_vector(self, observations: dict[str, torch.Tensor], count: int) -> torch.Tensor:
        """[count, 3] inputs of the goal embedding: given directly, from the dummy goal, or the sensor."""
        if GOAL_VECTOR_KEY in observations:
            return observations[GOAL_VECTOR_KEY]
        goal = self.dummy_goal.expand(count, 2) if self.uses_dummy_goal else observations[GOAL_SENSOR]
        rho, phi = goal[:, 0], goal[:, 1]
        return torch.stack([rho, torch.cos(-phi), torch.sin(-phi)], -1)


_POLICY_CLASSES: dict[type, type[ActorCritic]] = {}  # config class -> the policy class built from it


class ActorCritic(nn.Module, PolicyHubMixin):
    """Acting and PPO evaluation on top of a subclass's forward(); see the module docstring for shapes.

    Subclasses name their `config_class`, set `config` (whose metadata say what the model is),
    `hidden_state_shape` and `visual_encoder`, and implement forward(). `save_pretrained`,
    `from_pretrained` and `push_to_hub` come from navzoo.models.hub_mixin.
    """

    config: ModelConfig  # each subclass declares its own config class
    critic: CriticHead  # the value head (PPO's critic warm-up trains it alone)

    config_class: ClassVar[type | None] = None  # the config a concrete class is built from

    def __init_subclass__(cls, **kwargs: Any):
        super().__init_subclass__(**kwargs)
        config_class = cls.__dict__.get("config_class")
        if config_class is not None:
            _POLICY_CLASSES[config_class] = cls

    @staticmethod
    def class_for(config: Any) -> type[ActorCritic]:
        """The policy class an architecture config builds."""
        if type(config) not in _POLICY_CLASSES:
            raise ConfigError("architecture", type(config).__name__, [c.__name__ for c in _POLICY_CLASSES])
        return _POLICY_CLASSES[type(config)]

    @classmethod
    def from_folder(
        cls,
        folder: str | Path,
        *,
        device: str | torch.device = "cpu",
        fallback: ModelMetadata | None = None,
    ) -> Self:
        """Build the policy `folder`/config.json describes and load `folder`/model.safetensors strictly.

        `fallback` gives the name and provenance where the file has none (a zoo entry's, for its weights).
        Everything `config_from_folder` checks is refused before anything is allocated.
        """
        config = cls.config_from_folder(folder, fallback=fallback)
        policy_class = cls.class_for(config)
        assert issubclass(policy_class, cls)  # config_from_folder refuses a folder of another class
        policy = policy_class(config, fetch_timm_weights=False)
        weights_file = Path(folder) / weights.WEIGHTS_NAME
        tensors = weights.read_weights(weights_file)
        weights.check_state_dict(policy, tensors, str(weights_file))
        policy.load_state_dict(tensors, strict=True)
        return policy.to(device).eval()

    @classmethod
    def config_from_folder(cls, folder: str | Path, *, fallback: ModelMetadata | None = None) -> ModelConfig:
        """The config `folder`/config.json describes (with `fallback`'s name and provenance where it has
        none), checked without reading a tensor: the architecture is built on the meta device (shapes, no
        memory) and compared with the shapes in the safetensors header, so a config that disagrees with its
        weights, or one too large for the memory there is (navzoo.models.model_memory), is refused."""
        folder = Path(folder)
        config, _ = weights.read_config(folder)
        if fallback is not None:
            config = config.replace(metadata=config.metadata.or_else(fallback))
        policy_class = cls.class_for(config)
        if not issubclass(policy_class, cls):
            raise WeightsFormatError(
                f"{folder} holds a {policy_class.__name__}, not a {cls.__name__}: load it with "
                f"{policy_class.__name__}.from_pretrained, ActorCritic.from_pretrained or navzoo.load"
            )
        weights_file = folder / weights.WEIGHTS_NAME
        # Weights come from the file, so there is no point fetching timm's ImageNet weights first.
        with torch.device("meta"):
            shapes = weights.read_header(weights_file)
            shaped = policy_class(config, fetch_timm_weights=False)
            weights.check_shapes(shaped, shapes, str(weights_file))
        refuse_unless_model_fits(config, measure(shaped, shaped.hidden_state_shape))
        return config

    # What the model is, read from its config (navzoo.models.metadata).
    @property
    def name(self) -> str | None:
        return self.config.metadata.name

    @property
    def task(self) -> str:
        """The task it was trained for ("pointnav", "flee" or "explore")."""
        return self.config.metadata.task

    @property
    def provenance(self) -> dict | None:
        return self.config.metadata.provenance

    @property
    def hidden_state_shape(self) -> tuple[int, int]:
        raise NotImplementedError

    @property
    def visual_encoder(self) -> VisualEncoder | None:
        """The encoder of its cameras; None for a blind policy."""
        raise NotImplementedError

    def initial_state(self, batch_size: int, device: torch.device | str | None = None) -> torch.Tensor:
        device = device if device is not None else next(self.parameters()).device
        return torch.zeros(batch_size, *self.hidden_state_shape, device=device)

    def act(
        self,
        observations: dict[str, torch.Tensor],
        hidden: torch.Tensor,
        prev_actions: torch.Tensor,
        masks: torch.Tensor,
        deterministic: bool = False,
    ) -> ActResult:
        """Choose actions for one step: sampled, or the most likely one when `deterministic`."""
        out = self(observations, hidden, prev_actions, masks)
        dist = out.distribution
        action = dist.logits.argmax(-1) if deterministic else dist.sample()
        return ActResult(action, dist.log_prob(action), out.value, out.hidden)

    def evaluate_actions(
        self,
        observations: dict[str, torch.Tensor],
        hidden: torch.Tensor,
        prev_actions: torch.Tensor,
        masks: torch.Tensor,
        actions: torch.Tensor,
    ) -> EvaluateResult:
        """Values, log-probs and entropies of given actions over a rollout ([T, N]) for the PPO loss.

        `hidden` is the state before step 0; episode starts inside the rollout are read from `masks`.
        """
        if masks.dim() != 2 or actions.shape != masks.shape or actions.is_floating_point():
            raise ObservationError(
                f"evaluate_actions takes [T, N] masks and integer actions of the same shape; got masks "
                f"{tuple(masks.shape)} and actions {tuple(actions.shape)} {actions.dtype}"
            )
        out = self(observations, hidden, prev_actions, masks)
        actions = actions.long()
        dist = out.distribution
        return EvaluateResult(
            out.value,
            dist.log_prob(actions),
            dist.entropy(),
            out.hidden,
            dist.logits,
            out.features,
            out.visual,
        )

    def freeze_visual_encoder(self) -> VisualEncoder:
        """Freeze the visual encoder (no gradients, always in eval mode) and return it."""
        if self.visual_encoder is None:
            raise ObservationError("the blind policy has no visual encoder")
        return self.visual_encoder.freeze()

    def check_recurrent_inputs(
        self, hidden: torch.Tensor, prev_actions: torch.Tensor, masks: torch.Tensor
    ) -> tuple[int, ...]:
        """Raise ObservationError unless masks, prev_actions and hidden fit; returns the leading dims."""
        if not isinstance(masks, torch.Tensor) or masks.dtype != torch.bool or masks.dim() not in (1, 2):
            raise ObservationError(
                f"masks must be a bool tensor [N] (or [T, N]), True where the episode continues; got "
                f"{_describe(masks)}"
            )
        lead = tuple(masks.shape)
        if (
            not isinstance(prev_actions, torch.Tensor)
            or prev_actions.is_floating_point()
            or tuple(prev_actions.shape) != lead
        ):
            raise ObservationError(
                f"prev_actions must be an integer tensor of shape {lead}; got {_describe(prev_actions)}"
            )
        expected = (lead[-1], *self.hidden_state_shape)
        if not isinstance(hidden, torch.Tensor) or tuple(hidden.shape) != expected:
            raise ObservationError(
                f"hidden must have shape {expected} (see policy.initial_state); got {_describe(hidden)}"
            )
        return lead


class PointNavPolicy(ActorCritic):
    """Actor-critic for PointGoal navigation; see the module docstring for shapes."""

    config_class = PolicyConfig
    config: PolicyConfig

    def __init__(self, config: PolicyConfig, *, fetch_timm_weights: bool = True):
        """`fetch_timm_weights=False` builds a timm encoder without fetching the ImageNet weights that
        config.timm_pretrained asks for: for weights about to be loaded from a file."""
        super().__init__()
        self.config = config
        self.net = PointNavNet(config, fetch_timm_weights)
        self.action_distribution = CategoricalNet(config.hidden_size, config.num_actions)
        self.critic = CriticHead(config.hidden_size)

    @property
    def visual_encoder(self) -> VisualEncoder | None:
        return self.net.visual_encoder

    @property
    def hidden_state_shape(self) -> tuple[int, int]:
        return (self.config.recurrent_layers, self.config.hidden_size)

    def forward(
        self,
        observations: dict[str, torch.Tensor],
        hidden: torch.Tensor,
        prev_actions: torch.Tensor,
        masks: torch.Tensor,
    ) -> PolicyOutput:
        """One step ([N] masks) or a sequence ([T, N] masks, observations [T, N, ...]); differentiable."""
        self.check_inputs(observations, hidden, prev_actions, masks)
        lead = masks.shape
        # Other entries of the simulator's dict are ignored.
        used = (*self.config.sensors, VISUAL_FEATURES_KEY, GOAL_VECTOR_KEY)
        flat = {k: v.flatten(0, len(lead) - 1) for k, v in observations.items() if k in used}
        features, hidden, visual = self.net(
            flat, hidden, prev_actions.long().view(-1, lead[-1]), masks.view(-1, lead[-1])
        )
        features = features.view(*lead, -1)
        visual = visual.view(*lead, -1) if visual is not None else None
        distribution = self.action_distribution(features)
        return PolicyOutput(distribution, self.critic(features), hidden, features, visual)

    def controller(
        self,
        goal_vector: torch.Tensor,
        observations: dict[str, torch.Tensor],
        hidden: torch.Tensor,
        prev_actions: torch.Tensor,
        masks: torch.Tensor,
    ) -> PolicyOutput:
        """The policy as a differentiable controller: the goal embedding's input [..., 3] =
        [rho, cos(-phi), sin(-phi)] in (read back as (rho, phi) by a net="baseline" policy), the action
        distribution out. Gradients flow back to `goal_vector` (the neural-controller transfer setting)."""
        if not self.net.has_goal_input:
            raise ObservationError(f"this policy has no goal input ({GOAL_SENSOR} is not among its sensors)")
        if tuple(goal_vector.shape) != (*masks.shape, 3):
            raise ObservationError(
                f"goal_vector must have shape {(*masks.shape, 3)}; got {_describe(goal_vector)}"
            )
        return self({**observations, GOAL_VECTOR_KEY: goal_vector}, hidden, prev_actions, masks)

    def encode(self, observations: dict[str, torch.Tensor]) -> torch.Tensor:
        """Visual features [N, C, h, w] of one batch of observations (the frozen-feature use)."""
        if self.visual_encoder is None:
            raise ObservationError("the blind policy has no visual encoder")
        first = observations.get(self.config.visual_sensors[0]) if isinstance(observations, dict) else None
        self._check_visual(observations, tuple(first.shape[:1]) if isinstance(first, torch.Tensor) else (-1,))
        return self.visual_encoder(observations)

    def check_inputs(
        self,
        observations: dict[str, torch.Tensor],
        hidden: torch.Tensor,
        prev_actions: torch.Tensor,
        masks: torch.Tensor,
    ) -> None:
        """Raise ObservationError naming the first input whose key, shape or dtype does not fit."""
        lead = self.check_recurrent_inputs(hidden, prev_actions, masks)
        if self.config.has_goal and GOAL_VECTOR_KEY not in observations:
            _check(observations, GOAL_SENSOR, (*lead, 2), "a float tensor of (rho, phi)", floating=True)
        if self.visual_encoder is not None and VISUAL_FEATURES_KEY not in observations:
            self._check_visual(observations, lead)
        if self.config.has_seen_map:
            size = self.config.seen_map_size
            assert size is not None  # PolicyConfig.validate checks it with the sensor
            shape = (*lead, size, size, SEEN_MAP_CHANNELS)
            _check(observations, SEEN_MAP, shape, "a float map of 0s and 1s", floating=True)

    def _check_visual(self, observations: dict[str, torch.Tensor], lead: tuple[int, ...]) -> None:
        assert self.config.resolution is not None  # PolicyConfig.validate: every camera policy has one
        h, w = self.config.resolution
        for sensor in self.config.visual_sensors:
            shape = (*lead, h, w, SENSOR_CHANNELS[sensor])
            if sensor == "rgb":
                _check(observations, sensor, shape, "uint8 in [0, 255]", dtype=torch.uint8)
            else:
                _check(observations, sensor, shape, "float in [0, 1]", floating=True)


def _describe(value: object) -> str:
    if isinstance(value, torch.Tensor):
        return f"{tuple(value.shape)} {value.dtype}"
    return type(value).__name__


def _check(
    observations: dict[str, torch.Tensor],
    key: str,
    shape: tuple[int, ...],
    what: str,
    dtype: torch.dtype | None = None,
    floating: bool = False,
) -> None:
    if not isinstance(observations, dict) or key not in observations:
        have = sorted(observations) if isinstance(observations, dict) else type(observations).__name__
        raise ObservationError(f"observation {key!r} is missing (got {have}); this policy needs it")
    value = observations[key]
    ok = isinstance(value, torch.Tensor) and tuple(value.shape) == shape
    ok = ok and (value.dtype == dtype if dtype is not None else value.is_floating_point() or not floating)
    if not ok:
        raise ObservationError(
            f"observation {key!r} must be {what} with shape {shape} (the policy was built for its config's "
            f"resolution and sensors); got {_describe(value)}"
        )
