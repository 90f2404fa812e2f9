"""Gymnasium environments over the embedded simulator, for code written against gymnasium and its wrappers.

``NavVectorEnv`` is a gymnasium VectorEnv over one BatchSim, so the batch stays one simulator:
``gymnasium.make_vec("navzoo:navzoo/PointNav-v0", num_envs=N, vectorization_mode="vector_entry_point")``.
It autoresets as gymnasium's own vector envs do (NEXT_STEP by default: the step that ends an episode
returns its last observation, the next step the first of a new one, ignoring that environment's action),
or in the same step (SAME_STEP, like habitat's vector env, the last observation in ``info["final_obs"]``),
or not at all (DISABLED: reset finished environments with ``reset(options={"reset_mask": mask})``).
The metrics of episodes that ended (success, spl, ...) are in ``info["final_info"]`` with gymnasium's
``_``-prefixed masks. ``NavEnv`` is one environment behind gymnasium.Env; its info holds the episode's
metrics so far at every step, as habitat's environments report their measures. Observations are numpy
arrays with BatchSim's keys, shapes and dtypes; ``render_mode="rgb_array"`` draws the camera next to a
top-down map of the episode so far, in frames of one size for the environment's lifetime (as video
recorders need).

Episode length. ``gymnasium.make(..., max_episode_steps=N)`` gives N to gymnasium's TimeLimit wrapper and
never to the environment, so ``make_env``, the registered entry point, lifts the simulator's own limit:
TimeLimit (the spec's 500 steps, or N) is then the one limit, and the last info of a cut episode has its
metrics. ``make_vec`` passes N to the simulator itself. Either way episodes end at N with their metrics.
"""

import dataclasses
import reprlib
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space
from PIL import Image

from navzoo.errors import ConfigError, NavzooError, closest
from navzoo.evaluation.scene_maps import scene_maps
from navzoo.evaluation.topdown import draw_episode
from navzoo.names import GOAL_SENSOR, SEEN_MAP, SEEN_MAP_CHANNELS
from navzoo.sim.batch_sim import BatchSim
from navzoo.sim.config import ACTION_NAMES, SimConfig
from navzoo.tasks import get_task

RENDER_FPS = 8
RENDER_HEIGHT = 256
RESET_OPTIONS = ("reset_mask",)
UNLIMITED_STEPS = 2**31 - 1  # SimConfig.max_episode_steps when a TimeLimit wrapper ends the episodes
_quote = reprlib.Repr()  # an action quoted in a message is cut short
_quote.maxstring = _quote.maxother = _quote.maxlist = 40


def observation_space(config: SimConfig) -> spaces.Dict:
    height, width = config.resolution
    parts = {}
    if "depth" in config.sensors:
        parts["depth"] = spaces.Box(0.0, 1.0, (height, width, 1), np.float32)
    if "rgb" in config.sensors:
        parts["rgb"] = spaces.Box(0, 255, (height, width, 3), np.uint8)
    if SEEN_MAP in config.sensors:
        size = config.seen_map_size
        parts[SEEN_MAP] = spaces.Box(0.0, 1.0, (size, size, SEEN_MAP_CHANNELS), np.float32)
    if get_task(config.task).has_goal:
        low = np.array([0.0, -np.pi], dtype=np.float32)
        high = np.array([np.finfo(np.float32).max, np.pi], dtype=np.float32)
        parts[GOAL_SENSOR] = spaces.Box(low, high, (2,), np.float32)
    return spaces.Dict(parts)


def _config(config: SimConfig | None, **overrides) -> SimConfig:
    """A SimConfig from gymnasium.make's keyword arguments (SimConfig fields), 64x64 by default."""
    _check_keywords(overrides)
    return (config or SimConfig(resolution=(64, 64))).replace(**overrides)


def _check_keywords(overrides: dict[str, Any]) -> None:
    """ConfigError naming the keyword arguments that are not SimConfig fields (only those), each with the
    field it most likely meant."""
    fields = [field.name for field in dataclasses.fields(SimConfig)]
    unknown = [key for key in overrides if key not in fields]
    allowed = "SimConfig fields (navzoo.sim.SimConfig), e.g. resolution=(64, 64)"
    if len(unknown) == 1:
        raise ConfigError("keyword argument", unknown[0], allowed, suggestion=closest(unknown[0], fields))
    if unknown:
        meant = [f"{closest(key, fields)!r} for {key!r}" for key in unknown if closest(key, fields)]
        hint = f"; did you mean {', '.join(meant)}?" if meant else ""
        raise ConfigError("keyword arguments", unknown, allowed + hint)


class ActionError(NavzooError, gym.error.InvalidAction):
    """An action outside the action space: a navzoo error, and the error gymnasium names for it."""


def check_actions(actions, shape: tuple[int, ...]) -> np.ndarray:
    """`actions` as an int64 array of `shape` (() for NavEnv, (N,) for NavVectorEnv): integers, Python's
    or numpy's (scalars and arrays), in the action space. Bools and floats are refused, not rounded: an
    action 1.9 or True is a bug in the caller, not action 1. ActionError otherwise."""
    single = shape == ()
    allowed = ", ".join(f"{i} ({name})" for i, name in enumerate(ACTION_NAMES))
    expected = "an integer action" if single else f"integer actions of shape {shape}"
    problem = f"expected {expected}, each one of {allowed}; got"
    try:
        array = np.asarray(actions)
    except (ValueError, TypeError):  # a ragged list
        raise ActionError(f"{problem} {_quote.repr(actions)}") from None
    if array.dtype.kind not in "iu" or array.shape != shape:
        found = _quote.repr(actions) if single else f"{array.dtype} of shape {array.shape}"
        raise ActionError(f"{problem} {found}")
    if ((array < 0) | (array >= len(ACTION_NAMES))).any():
        raise ActionError(f"{problem} {_quote.repr(actions)}")
    return array.astype(np.int64)


def _to_numpy(obs: dict[str, torch.Tensor]) -> dict[str, np.ndarray]:
    return {key: value.cpu().numpy() for key, value in obs.items()}


def check_reset_options(options: dict | None, allowed: tuple[str, ...]) -> dict:
    """`options` of a reset as a dict; ConfigError for a key not in `allowed` (they are never ignored)."""
    options = dict(options or {})
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise ConfigError("options", unknown, f"keys of {allowed}" if allowed else "none (no reset options)")
    return options


class NavVectorEnv(VectorEnv):
    # An instance attribute, as gymnasium declares it: each environment sets its own autoreset_mode.
    metadata: dict[str, Any] = {  # noqa: RUF012
        "autoreset_mode": AutoresetMode.NEXT_STEP,
        "render_modes": ["rgb_array"],
        "render_fps": RENDER_FPS,
    }

    def __init__(
        self,
        config: SimConfig | None = None,
        *,
        num_envs: int | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        render_mode: str | None = None,
        **overrides,
    ):
        if num_envs is not None:
            overrides["num_envs"] = num_envs
        config = _config(config, **overrides)
        self.sim = BatchSim(config)
        self.num_envs = config.num_envs
        self.metadata = {**self.metadata, "autoreset_mode": AutoresetMode(autoreset_mode)}
        self.render_mode = _check_render_mode(render_mode, self.metadata)
        self.single_observation_space = observation_space(config)
        self.single_action_space = spaces.Discrete(len(ACTION_NAMES))
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        # Environments whose episode ended: the simulator has begun their next one, which they show at
        # the next step (NEXT_STEP) or once reset (DISABLED); until then they do not act.
        self._waiting = np.zeros(self.num_envs, dtype=bool)
        self._trails = [[] for _ in range(self.num_envs)]  # poses of the episode each env shows
        # the (scene slot, goal, floor height) of the episode each env shows, which outlive a reset
        self._scenes: list[tuple[int, list[float] | None, float]] = [(0, None, 0.0)] * self.num_envs
        self._maps = scene_maps(self.sim)
        self._last_obs: dict[str, np.ndarray] = {}
        self._metrics: dict[str, torch.Tensor] = {}  # the last step's BatchSim info["metrics"], for NavEnv

    @property
    def autoreset_mode(self) -> AutoresetMode:
        return self.metadata["autoreset_mode"]

    def reset(self, *, seed: int | list[int] | None = None, options: dict | None = None):
        options = check_reset_options(options, RESET_OPTIONS)
        mask = options.get("reset_mask")
        if mask is None:
            obs = self.sim.reset(seed=seed)
            self._waiting[:] = False
            envs = range(self.num_envs)
        else:
            mask = _check_reset_mask(mask, self.num_envs)
            if seed is not None:
                raise ConfigError("seed", seed, "None with a reset_mask (seed the batch in a full reset)")
            # Waiting environments have their next episode begun already; the others begin one now.
            fresh = np.flatnonzero(mask & ~self._waiting)
            obs = self.sim.reset(envs=torch.as_tensor(fresh)) if len(fresh) else self.sim.observe()
            self._waiting[mask] = False
            envs = np.flatnonzero(mask).tolist()
        for i in envs:
            self._begin_trail(i)
        self._last_obs = _to_numpy(obs)
        return self._last_obs, {}

    def step(self, actions):
        actions = torch.as_tensor(check_actions(actions, (self.num_envs,)), device=self.sim.device)
        # Waiting environments do not act (under DISABLED until they are reset: gymnasium leaves stepping a
        # finished environment undefined, here it waits).
        waiting = self._waiting.copy()
        active = None if not waiting.any() else torch.as_tensor(~waiting, device=self.sim.device)
        obs, reward, done, info = self.sim.step(actions, active=active, final_observations=True)
        self._metrics = info["metrics"]
        done_np = done.cpu().numpy()
        truncated = info["truncated"].cpu().numpy()
        terminated = done_np & ~truncated
        infos: dict = {"collided": info["collided"].cpu().numpy()}
        observations = _to_numpy(obs)
        if done_np.any():
            metrics = {k: v.cpu().numpy() for k, v in info["episode"].items() if k != "observation"}
            infos["final_info"] = {**metrics, **{f"_{k}": done_np.copy() for k in metrics}}
            infos["_final_info"] = done_np.copy()
            last = _final_observations(info, done)
            if self.autoreset_mode == AutoresetMode.SAME_STEP:
                infos["final_obs"], infos["_final_obs"] = last, done_np.copy()
            else:  # the ended episodes' last observations now, their next ones later
                for i in np.flatnonzero(done_np):
                    for key, value in last[i].items():
                        observations[key][i] = value
        self._record_trails(done_np, waiting, info)
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            self._waiting = done_np & ~waiting
        elif self.autoreset_mode == AutoresetMode.DISABLED:
            self._waiting = done_np | waiting
        self._last_obs = observations
        return observations, reward.cpu().numpy(), terminated, truncated, infos

    def render(self) -> tuple[np.ndarray, ...] | None:
        """One frame per environment (render_mode "rgb_array"): its camera next to a top-down map of
        its episode so far."""
        if self.render_mode is None:
            gym.logger.warn("render() was called without a render_mode; pass render_mode='rgb_array'")
            return None
        return tuple(self._frame(i) for i in range(self.num_envs))

    def close_extras(self, **kwargs):
        self.sim.close()

    def _begin_trail(self, i: int) -> None:
        goal = self.sim.goal[i].tolist() if get_task(self.sim.config.task).has_goal else None
        self._scenes[i] = (int(self.sim.slot[i]), goal, self._maps.floor(i))
        self._trails[i] = [self._pose(i)]

    def _pose(self, i: int) -> tuple[float, float, float]:
        x, y = self.sim.pos[i].tolist()
        return x, y, float(self.sim.heading[i])

    def _record_trails(self, done: np.ndarray, waited: np.ndarray, info: dict) -> None:
        """Each environment's poses since its episode began, for render(); an ended episode keeps its
        trail (its end pose) until its next one is shown."""
        for i in range(self.num_envs):
            if waited[i]:  # its new episode is shown from this step on
                self._begin_trail(i)
            elif done[i]:
                x, y = info["episode"]["position"][i].tolist()
                self._trails[i].append((x, y, float(info["episode"]["heading"][i])))
                if self.autoreset_mode == AutoresetMode.SAME_STEP:
                    self._begin_trail(i)
            else:
                self._trails[i].append(self._pose(i))

    def _frame(self, i: int) -> np.ndarray:
        slot, goal, floor = self._scenes[i]
        trail = np.asarray(self._trails[i] or [self._pose(i)], dtype=np.float64)
        top = draw_episode(self._maps.canvas(slot, floor), trail[:, :2], goal, headings=trail[:, 2])
        views = [_camera_image(key, value[i]) for key, value in self._last_obs.items() if value.ndim == 4]
        # Maps of other scenes have other shapes: boxed in a square, every frame has the same size.
        return _side_by_side([*views, _boxed(top, RENDER_HEIGHT)], RENDER_HEIGHT)


def _check_render_mode(render_mode: str | None, metadata: dict) -> str | None:
    if render_mode is not None and render_mode not in metadata["render_modes"]:
        raise ConfigError("render_mode", render_mode, (None, *metadata["render_modes"]))
    return render_mode


def _check_reset_mask(mask, num_envs: int) -> np.ndarray:
    if not isinstance(mask, np.ndarray) or mask.dtype != np.bool_ or mask.shape != (num_envs,):
        raise ConfigError("options['reset_mask']", mask, f"a numpy bool array of shape ({num_envs},)")
    if not mask.any():
        raise ConfigError("options['reset_mask']", mask, "at least one True")
    return mask


def _camera_image(key: str, value: np.ndarray) -> np.ndarray:
    """An observation as an RGB uint8 image: RGB as it is, depth as grey (near is dark)."""
    if key == "rgb":
        return value
    return np.repeat((value[..., :1] * 255).astype(np.uint8), 3, axis=-1)


def _side_by_side(images: list[np.ndarray], height: int) -> np.ndarray:
    """The images scaled to `height` pixels and placed left to right."""
    scaled = [
        Image.fromarray(im).resize(
            (max(1, round(im.shape[1] * height / im.shape[0])), height), Image.Resampling.NEAREST
        )
        for im in images
    ]
    canvas = Image.new("RGB", (sum(im.width for im in scaled), height))
    x = 0
    for im in scaled:
        canvas.paste(im, (x, 0))
        x += im.width
    return np.asarray(canvas)


def _boxed(image: np.ndarray, size: int) -> np.ndarray:
    """`image` scaled to fit a black `size` x `size` square, centred."""
    scale = size / max(image.shape[:2])
    height, width = (max(1, round(n * scale)) for n in image.shape[:2])
    scaled = Image.fromarray(image).resize((width, height), Image.Resampling.NEAREST)
    canvas = Image.new("RGB", (size, size))
    canvas.paste(scaled, ((size - width) // 2, (size - height) // 2))
    return np.asarray(canvas)


def _final_observations(info: dict, done: torch.Tensor) -> np.ndarray:
    """Last observation of each finished episode (None for the others), as the simulator saw it before
    the episode reset (BatchSim.step's final_observations)."""
    last = _to_numpy(info["episode"]["observation"])
    final = np.empty(len(done), dtype=object)
    for i in torch.nonzero(done).squeeze(1).tolist():
        final[i] = {key: value[i] for key, value in last.items()}
    return final


class NavEnv(gym.Env):
    """One environment: a BatchSim of size 1 behind the gymnasium.Env interface."""

    metadata: ClassVar[dict] = {"render_modes": ["rgb_array"], "render_fps": RENDER_FPS}

    def __init__(self, config: SimConfig | None = None, render_mode: str | None = None, **overrides):
        if overrides.get("num_envs", 1) != 1:
            raise ConfigError(
                "num_envs",
                overrides["num_envs"],
                "1 for gymnasium.make, which builds one environment; for a batch of N use "
                "gymnasium.make_vec(env_id, num_envs=N, vectorization_mode='vector_entry_point'), one "
                "simulator stepping them all",
            )
        self.batch = NavVectorEnv(
            _config(config, **overrides).replace(num_envs=1), autoreset_mode=AutoresetMode.DISABLED
        )
        self.sim = self.batch.sim
        self.render_mode = _check_render_mode(render_mode, self.metadata)
        self.batch.render_mode = self.render_mode
        self.observation_space = self.batch.single_observation_space
        self.action_space = self.batch.single_action_space

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        check_reset_options(options, ())
        if seed is None and self.batch._waiting[0]:  # the next episode of this environment's stream
            obs, _ = self.batch.reset(options={"reset_mask": np.ones(1, dtype=bool)})
        else:
            obs, _ = self.batch.reset(seed=seed)
        return {k: v[0] for k, v in obs.items()}, {}

    def step(self, action):
        obs, reward, terminated, truncated, info = self.batch.step(check_actions(action, ())[None])
        step_info: dict[str, Any] = {"collided": bool(info["collided"][0])}
        # The metrics so far at every step, so whichever limit ends the episode, the simulator's or a
        # TimeLimit wrapper's, its last info has them; an ended episode's also say where it ended.
        step_info.update({k: v[0].tolist() for k, v in self.batch._metrics.items()})
        if "final_info" in info:
            step_info.update({k: v[0].tolist() for k, v in info["final_info"].items() if k[0] != "_"})
        observation = {k: v[0] for k, v in obs.items()}
        return observation, float(reward[0]), bool(terminated[0]), bool(truncated[0]), step_info

    def render(self) -> np.ndarray | None:
        frames = self.batch.render()
        return None if frames is None else frames[0]


def make_env(config: SimConfig | None = None, **overrides) -> NavEnv:
    """NavEnv as gymnasium.make builds it (the registered entry point): gymnasium's TimeLimit, with the
    spec's 500 steps or make's max_episode_steps, ends its episodes, so the simulator's own limit is lifted
    unless `config` sets one (see the module docstring)."""
    if config is None:
        overrides["max_episode_steps"] = UNLIMITED_STEPS
    return NavEnv(config, **overrides)


make_env.metadata = NavEnv.metadata  # where gymnasium.make looks for an entry point's render modes
