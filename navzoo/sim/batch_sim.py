"""BatchSim: N navigation environments stepped, scored and rendered in one call, on CPU or CUDA.

Observations follow habitat's sensor names and layouts: ``depth`` [N, H, W, 1] float32 in [0, 1] (z-depth
normalised from [min_depth, max_depth]), ``rgb`` [N, H, W, 3] uint8, and for PointGoal
``pointgoal_with_gps_compass`` [N, 2] = (rho, phi) with phi positive to the agent's right (habitat-lab's is
positive to its left; navzoo.zoo.habitat_checkpoints converts policies between the two). Episodes reset
themselves: the observation returned for a finished environment is the first of its next episode, and the
finished episode's metrics come back in ``info["episode"]``. ``info["metrics"]`` has every environment's
metrics as of this step, what its episode would report if it ended now (habitat's per-step measures).

Randomness is a counter-based hash of (environment seed, episode counter), so every environment has its own
reproducible stream, and CPU and CUDA draw the same episodes. The whole state is therefore a few tensors and
counters: ``state_dict()`` / ``load_state_dict()`` checkpoint a simulator so that a resumed run continues
bit-identically.
"""

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from navzoo.errors import ConfigError, NavzooError
from navzoo.names import CAMERAS, SEEN_MAP
from navzoo.sim import kernels, render
from navzoo.sim.config import MOVE_FORWARD, STOP, TURN_LEFT, TURN_RIGHT, SimConfig
from navzoo.sim.episodes import STARTS_PER_ANCHOR, Episode, episodes_for
from navzoo.sim.map_sensor import SeenMapSensor
from navzoo.sim.memory_estimate import refuse_unless_sim_fits
from navzoo.sim.physics import disc_free, move
from navzoo.sim.pool import ScenePool
from navzoo.sim.scenes import stable_seed
from navzoo.sim.task import SimTask, lookup_task

if TYPE_CHECKING:
    from navzoo.sim.scans.scene_source import MeshScenePool
    from navzoo.sim.scans.seen_map import MeshSeenMapSensor

_MASK32 = 0xFFFFFFFF
# The per-environment tensors a checkpoint holds (and `visited` for Explore), and the config fields that
# decide what the saved state means, so a checkpoint must match them.
_STATE_TENSORS = (
    "slot",
    "pos",
    "heading",
    "goal",
    "field",
    "steps",
    "path_length",
    "collisions",
    "geodesic",
    "start_geodesic",
    "episode_return",
    "episode_index",
    "episode_counter",
    "env_seeds",
)
_STATE_CONFIG = (
    "task",
    "split",
    "num_envs",
    "seed",
    "scene_families",
    "scenes_in_memory",
    "episodes_per_scene",
)


class BatchSim:
    """A batch of environments of one task and split. See the module docstring for the data layout."""

    # The state the Explore task keeps here (navzoo.tasks.explore: its allocate() creates it).
    visit_shape: tuple[int, int]  # (rows, cols) of its cells on navzoo's own scenes
    # [N, rows, cols] bool: the cells each episode has visited; on scanned scenes [N, K] int64, the keys of
    # the cells visited in order (-1 after the last)
    visited: torch.Tensor
    # navzoo's own scenes; unset with scanned scenes (config.scenes_dir), which `meshes` holds instead
    pool: ScenePool

    def __init__(self, config: SimConfig, episodes: list[Episode] | None = None):
        self.config = config
        self.num_envs = n = config.num_envs
        self.device = dev = torch.device(config.device)
        if episodes is None:
            episodes = episodes_for(config)
        refuse_unless_sim_fits(config, episodes)  # before anything large is allocated
        self.task: SimTask[BatchSim] = lookup_task(config.task)
        self.meshes: MeshScenePool | None = None
        if config.scenes_dir is None:
            self.pool = ScenePool(config, dev, episodes, fields_from_start=self.task.starts_at_field_source)
        else:
            from navzoo.sim.scans import scene_source  # loads trimesh and Embree: only here

            self.meshes = scene_source.MeshScenePool(  # no episodes: a training stream
                config, dev, episodes, fields_from_start=self.task.starts_at_field_source
            )
        self.episodes = episodes  # the fixed episode list, or None for freshly sampled training episodes
        self.fixed = episodes is not None
        height, width = config.resolution
        # Walk rays far enough that the image's edge columns reach max_depth in z-depth.
        max_range = config.max_depth * math.sqrt(1 + math.tan(math.radians(config.hfov) / 2) ** 2)
        self.camera = render.Camera(height, width, config.hfov, max_range, dev)
        # Agents move by a numba kernel on the CPU (as they are rendered) unless tensor kernels are asked for.
        self._move = kernels.move if dev.type == "cpu" and config.renderer != "torch" else move

        self.slot = torch.zeros(n, dtype=torch.long, device=dev)
        self.pos = torch.zeros(n, 2, device=dev)
        self.heading = torch.zeros(n, device=dev)
        self.goal = torch.zeros(n, 2, device=dev)
        self.field = torch.zeros(n, dtype=torch.long, device=dev)
        self.steps = torch.zeros(n, dtype=torch.long, device=dev)
        self.path_length = torch.zeros(n, device=dev)
        self.collisions = torch.zeros(n, dtype=torch.long, device=dev)
        self.geodesic = torch.zeros(n, device=dev)  # to the goal (PointGoal) or from the start (Flee)
        self.start_geodesic = torch.zeros(n, device=dev)
        self.episode_return = torch.zeros(n, device=dev)
        self.episode_index = torch.zeros(n, dtype=torch.long, device=dev)
        self.episode_counter = torch.zeros(n, dtype=torch.long, device=dev)
        self.env_seeds = torch.zeros(n, dtype=torch.long, device=dev)
        self.task.allocate(self)
        self.seen_map = self._seen_map_sensor() if SEEN_MAP in config.sensors else None
        self.seed(config.seed)

    def _seen_map_sensor(self) -> "SeenMapSensor | MeshSeenMapSensor":
        if self.meshes is None:
            return SeenMapSensor(self)
        from navzoo.sim.scans.seen_map import MeshSeenMapSensor  # with the other scanned-scene modules

        return MeshSeenMapSensor(self)

    # --- public API ------------------------------------------------------------------------------------
    def seed(self, seed: int | list[int]) -> None:
        """Seed every environment: one int (each environment derives its own) or one int per environment."""
        if isinstance(seed, int):
            seeds = [stable_seed("env", seed, i) & 0x7FFFFFFF for i in range(self.num_envs)]
        else:
            if len(seed) != self.num_envs:
                raise ConfigError("seed", seed, f"an int or a list of {self.num_envs} ints")
            seeds = [int(s) & 0x7FFFFFFF for s in seed]
        self.env_seeds = torch.tensor(seeds, dtype=torch.long, device=self.device)
        self.episode_counter.zero_()

    def reset(
        self, seed: int | list[int] | None = None, envs: torch.Tensor | None = None
    ) -> dict[str, torch.Tensor]:
        """Start a new episode in every environment (or in the listed ones) and return the observations."""
        if seed is not None:
            self.seed(seed)
        if envs is None:
            envs = torch.arange(self.num_envs, device=self.device)
        self._start_episodes(torch.as_tensor(envs, device=self.device))
        return self._observe(see=True)

    def step(
        self, actions: torch.Tensor, active: torch.Tensor | None = None, final_observations: bool = False
    ):
        """Apply one action per environment; returns (observations, rewards, dones, info). With `active`
        [N] bool, only those environments act: the others keep their state and get reward 0 (gymnasium's
        next-step autoreset shows an episode's first observation one step after its end). With
        `final_observations`, a step that ends episodes also returns every environment's observations from
        before the finished ones reset, `info["episode"]["observation"]`: their last (gymnasium's final
        observations), in their own scene, towards their own goal and with their own seen_map."""
        cfg = self.config
        actions = self._check_actions(actions)
        stop = actions == STOP
        turn = (actions == TURN_LEFT).float() - (actions == TURN_RIGHT).float()
        forward = actions == MOVE_FORWARD
        heading = _wrap(self.heading + turn * math.radians(cfg.turn_angle))
        if active is not None:
            active = torch.as_tensor(active, dtype=torch.bool, device=self.device)
            stop, forward = stop & active, forward & active
            heading = torch.where(active, heading, self.heading)  # unwrapped: _wrap may move it an ulp
        self.heading = heading
        delta = torch.stack([torch.cos(self.heading), torch.sin(self.heading)], 1) * cfg.forward_step
        delta = delta * forward[:, None]
        old = self.pos
        if self.meshes is None:
            self.pos, collided = self._move(
                self.pool.atlas.heights, self.pool.cell_size, self.slot, self.pos, delta, cfg.agent_radius
            )
            walked = (self.pos - old).norm(dim=1)
        else:  # habitat's path length is 3D: slopes and steps count
            self.pos, collided, walked = self.meshes.move(self.slot, self.pos, delta, forward)
        if self.seen_map is not None:
            self.seen_map.record_actions(forward.numpy())
            self.seen_map.bump()
        collided &= forward
        self.collisions += collided.long()
        self.path_length += walked
        self.steps += 1 if active is None else active.long()

        reward, metrics = self.task.step(self, stop)
        if active is not None:
            reward = torch.where(active, reward, 0.0)
        self.episode_return += reward
        truncated = (self.steps >= cfg.max_episode_steps) & ~stop
        done = stop | truncated
        metrics.update(self._episode_metrics())
        info: dict[str, Any] = {"collided": collided, "truncated": truncated, "metrics": metrics}
        if bool(done.any()):
            episode: dict[str, Any] = {k: v.clone() for k, v in metrics.items()}
            info["episode"] = episode
            episode["position"] = self.pos.clone()  # where each episode ended, before the reset below
            episode["heading"] = self.heading.clone()
            if self.meshes is not None:  # and on which floor (habitat's y) of a scanned scene
                episode["height"] = self.meshes.height.clone()
            finished = torch.nonzero(done).squeeze(1)
            if final_observations:  # mapping the same images again below adds nothing to the seen_map
                episode["observation"] = self._observe(see=True)
            self._start_episodes(finished)
        return self._observe(see=True), reward, done, info

    def observe(self, envs: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """Render the sensors of all environments (or of the listed ones). The seen_map sensor shows the
        map as the last step left it: rendering at a pose set by hand adds nothing to it."""
        return self._observe(envs)

    def _observe(self, envs: torch.Tensor | None = None, see: bool = False) -> dict[str, torch.Tensor]:
        """observe(); with `see`, the seen_map sensor first maps the depth images (all environments)."""
        cfg = self.config
        idx = slice(None) if envs is None else envs
        cameras = tuple(s for s in cfg.sensors if s in CAMERAS)
        obs = {}
        if cameras and self.meshes is not None:
            obs = self.meshes.observe(
                self.slot[idx], self.pos[idx], self.heading[idx], self.meshes.heights_of(idx), cameras
            )
        elif cameras:
            obs = render.observe(
                self.pool.atlas,
                self.camera,
                self.pool.materials,
                self.slot[idx],
                self.pos[idx],
                self.heading[idx],
                cfg.sensor_height,
                (cfg.min_depth, cfg.max_depth),
                cameras,
                compiled=cfg.compile,
                tensor_kernels=cfg.renderer == "torch",
            )
        if self.seen_map is not None:
            if see:
                self.seen_map.see(obs["depth"])
            listed = np.arange(self.num_envs) if envs is None else torch.as_tensor(envs).numpy()
            obs[SEEN_MAP] = self.seen_map.observation(listed)
        obs.update(self.task.observations(self, idx))
        return obs

    def geodesic_distance(self, points: torch.Tensor, envs: torch.Tensor | None = None) -> torch.Tensor:
        """Geodesic distance from points [M, 2] to the goal (Flee: from the start) of the listed envs."""
        idx = slice(None) if envs is None else envs
        if self.meshes is not None:
            return self.meshes.geodesic(self.slot[idx], self.field[idx], self.meshes.heights_of(idx), points)
        return self.pool.geodesic(self.field[idx], points)

    @property
    def scenes(self) -> "ScenePool | MeshScenePool":
        """Where the episodes' scenes come from: navzoo's own (`pool`) or scanned meshes (`meshes`)."""
        return self.pool if self.meshes is None else self.meshes

    def close(self) -> None:
        self.scenes.close()

    # --- checkpointing ---------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """Everything `step` and `observe` depend on: CPU copies of the per-environment tensors, the scene
        pool's state, and the config fields it must be loaded back under. Only tensors, ints, strings and
        lists, so it goes through ``torch.save`` and ``torch.load(weights_only=True)``."""
        state = {
            "config": {name: _plain(getattr(self.config, name)) for name in _STATE_CONFIG},
            "tensors": {name: getattr(self, name).to("cpu", copy=True) for name in self._state_tensors()},
            "pool": self.scenes.state_dict(),
        }
        if self.seen_map is not None:
            state[SEEN_MAP] = self.seen_map.state_dict()
        return state

    def load_state_dict(self, state: dict) -> None:
        """Continue from `state_dict()`; NavzooError if it was written under a different sim config."""
        for name in _STATE_CONFIG:
            saved, mine = state["config"].get(name), _plain(getattr(self.config, name))
            if saved != mine:
                raise NavzooError(
                    f"checkpoint was written with {name}={saved!r}, this simulator has {mine!r}; "
                    "resume with the same sim config"
                )
        tensors, expected = state["tensors"], self._state_tensors()
        if set(tensors) != set(expected):
            raise NavzooError(
                f"checkpoint holds the tensors {sorted(tensors)}, this simulator expects {sorted(expected)}; "
                "resume with the same sim config"
            )
        for name in expected:
            saved, mine = tensors[name], getattr(self, name)
            if saved.shape != mine.shape or saved.dtype != mine.dtype:
                raise NavzooError(
                    f"checkpoint tensor {name!r} is {tuple(saved.shape)} {saved.dtype}, this simulator "
                    f"expects {tuple(mine.shape)} {mine.dtype}; resume with the same sim config"
                )
        if (SEEN_MAP in state) != (self.seen_map is not None):
            raise NavzooError(
                f"checkpoint was written {'with' if SEEN_MAP in state else 'without'} the {SEEN_MAP} sensor, "
                "this simulator has the other; resume with the same sim sensors"
            )
        self.scenes.load_state_dict(state["pool"])
        for name, saved in tensors.items():
            # A copy, so that stepping never writes into the caller's state dict.
            setattr(self, name, saved.to(self.device, copy=True))
        if self.seen_map is not None:
            self.seen_map.load_state_dict(state[SEEN_MAP])  # after the slots: its maps are of their scenes

    def _state_tensors(self) -> tuple[str, ...]:
        return _STATE_TENSORS + self.task.state_tensors

    # --- episodes --------------------------------------------------------------------------------------
    def _start_episodes(self, envs: torch.Tensor) -> None:
        if self.episodes is not None:  # self.fixed
            self.episode_counter[envs] += 1
            index = (envs + (self.episode_counter[envs] - 1) * self.num_envs) % len(self.episodes)
            table = self.scenes.episodes
            self.episode_index[envs] = index
            self.slot[envs] = table["slot"][index]
            self.pos[envs] = table["start"][index]
            self.heading[envs] = table["heading"][index]
            self.goal[envs] = table["goal"][index]
            self.field[envs] = table["field"][index]
            if self.meshes is not None:
                self.meshes.begin(envs, index)
        elif self.meshes is not None:  # a training stream on meshes: (seed, env, counter) draws each episode
            drawn = self.meshes.stream_episodes(envs, self.env_seeds[envs], self.episode_counter[envs])
            self.episode_counter[envs] += 1
            for name in ("slot", "pos", "heading", "goal", "field"):
                getattr(self, name)[envs] = drawn[name]
            self.meshes.note_episodes_started(len(envs), self.slot)
        else:
            pool = self.pool
            u = self._uniform(envs, 4)  # drawn before the counter moves on
            self.episode_counter[envs] += 1
            active = pool.active_slots()
            slot = active[(u[:, 0] * len(active)).long().clamp_max(len(active) - 1)]
            anchors = pool.anchors_xy.shape[1]
            anchor = (u[:, 1] * anchors).long().clamp_max(anchors - 1)
            pick = (u[:, 2] * STARTS_PER_ANCHOR).long().clamp_max(STARTS_PER_ANCHOR - 1)
            start_cell = pool.starts[slot, anchor, pick]  # (row, col)
            start = (start_cell.flip(1).float() + 0.5) * pool.nav_cell
            anchor_xy = pool.anchors_xy[slot, anchor]
            self.slot[envs] = slot
            self.pos[envs] = anchor_xy if self.task.starts_at_field_source else start
            self.heading[envs] = (u[:, 3] * 2 - 1) * math.pi
            self.goal[envs] = anchor_xy
            self.field[envs] = slot * anchors + anchor
            pool.note_episodes_started(len(envs), self.slot)
        self.steps[envs] = 0
        self.path_length[envs] = 0
        self.collisions[envs] = 0
        self.episode_return[envs] = 0
        self.task.begin(self, envs)
        self.start_geodesic[envs] = self.geodesic[envs]
        if self.meshes is not None and self.meshes.has_goal:
            # SPL's shortest path is habitat's, pulled taut; the graph's distances only drive the reward.
            self.start_geodesic[envs] = self.meshes.start_distance[envs.cpu()].to(self.device)
        if self.seen_map is not None:
            self.seen_map.reset(envs.numpy())

    def _uniform(self, envs: torch.Tensor, count: int) -> torch.Tensor:
        """Uniform [0, 1) draws [M, count] from each env's (seed, episode counter) stream."""
        key = hash32(self.env_seeds[envs] ^ hash32(self.episode_counter[envs] + 0x9E37))
        draws = [hash32(key + 0x6A09 * (j + 1)) for j in range(count)]
        return torch.stack(draws, 1).float() / 2.0**32

    def _episode_metrics(self) -> dict[str, torch.Tensor]:
        metrics = {
            "path_length": self.path_length.clone(),
            "collisions": self.collisions.float(),
            "num_steps": self.steps.float(),
            "episode_return": self.episode_return.clone(),
        }
        if self.fixed:
            metrics["episode_index"] = self.episode_index.clone()
        return metrics

    def _check_actions(self, actions) -> torch.Tensor:
        actions = torch.as_tensor(actions, device=self.device)
        if actions.shape != (self.num_envs,) or actions.dtype.is_floating_point:
            raise NavzooError(
                f"actions must be an integer tensor of shape ({self.num_envs},), got "
                f"{tuple(actions.shape)} {actions.dtype}; pass one action id per environment"
            )
        actions = actions.long()
        if bool(((actions < 0) | (actions > 3)).any()):
            raise NavzooError("actions must be 0 (stop), 1 (move_forward), 2 (turn_left) or 3 (turn_right)")
        return actions

    def is_navigable(self, points: torch.Tensor, envs: torch.Tensor | None = None) -> torch.Tensor:
        """Whether the agent's disc fits at each point [M, 2] in the scene of each listed env."""
        idx = slice(None) if envs is None else envs
        if self.meshes is not None:
            return self.meshes.is_navigable(self.slot[idx], self.meshes.heights_of(idx), points)
        return disc_free(
            self.pool.atlas.heights, self.pool.cell_size, self.slot[idx], points, self.config.agent_radius
        )

    def walks_straight(self, points: torch.Tensor, envs: torch.Tensor) -> torch.Tensor:
        """Whether the agent of each listed env would walk straight from where it stands to each point [M, 2]
        nearby: on a scanned mesh, without sliding along a wall or a step above its climb; on navzoo's own
        scenes, where its disc fits at the point (a forward step's length from a fitting disc)."""
        if self.meshes is not None:
            return self.meshes.walks_straight(
                self.slot[envs], self.pos[envs], self.meshes.heights_of(envs), points
            )
        return self.is_navigable(points, envs)


def _plain(value):
    """Config values as checkpoint-friendly builtins (tuples become lists)."""
    return list(value) if isinstance(value, tuple) else value


def _wrap(angle: torch.Tensor) -> torch.Tensor:
    return torch.remainder(angle + math.pi, 2 * math.pi) - math.pi


def hash32(x: torch.Tensor) -> torch.Tensor:
    """A 32-bit integer mixer on int64 tensors (constants below 2**31 keep products inside int64)."""
    x = x & _MASK32
    x = ((x >> 16) ^ x) * 0x45D9F3B & _MASK32
    x = ((x >> 16) ^ x) * 0x45D9F3B & _MASK32
    return (x >> 16) ^ x
