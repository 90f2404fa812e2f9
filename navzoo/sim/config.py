"""Configuration of the embedded batch simulator, with habitat / DD-PPO defaults."""

from dataclasses import dataclass

from navzoo.config_base import Config, one_of
from navzoo.errors import ConfigError
from navzoo.names import (
    ACTION_NAMES,
    MAX_SEEN_MAP_SIZE,
    RENDERERS,
    SCENE_FAMILIES,
    SEEN_MAP,
    SENSORS,
    SPLITS,
    TASKS,
)
from navzoo.typed_config import check_field_types

# Upper bounds that catch a typo before it allocates: 4096 px is past any camera navzoo trains with, and
# a million environments is far past what one machine steps.
MAX_RESOLUTION = 4096
MAX_NUM_ENVS = 1 << 20

# Action ids follow habitat: 0 stop, 1 move_forward, 2 turn_left, 3 turn_right.
STOP, MOVE_FORWARD, TURN_LEFT, TURN_RIGHT = 0, 1, 2, 3
__all__ = ["ACTION_NAMES", "RENDERERS", "SCENE_FAMILIES", "SENSORS", "SPLITS", "TASKS", "SimConfig"]


@dataclass(frozen=True)
class SimConfig(Config):
    """Everything that defines a batch of simulated environments.

    Sizes are in metres and degrees. `resolution` is (height, width) of every camera.
    """

    task: str = "pointnav"  # "pointnav" (PointGoal), "flee" or "explore" (navzoo.names.TASKS)
    # "train": an endless stream of procedural scenes; "val" or "test": fixed scenes and episodes.
    split: str = "train"
    num_envs: int = 4  # environments stepped together in one call
    # Cameras and maps to render: "depth", "rgb", "seen_map" (the goal sensor follows the task).
    sensors: tuple[str, ...] = ("depth",)
    resolution: tuple[int, int] = (256, 256)  # (height, width) of every camera, in pixels
    hfov: float = 90.0  # horizontal field of view of the cameras, in degrees
    sensor_height: float = 1.25  # height of the cameras above the floor, in metres
    # Depth is clipped to [min_depth, max_depth] metres and normalised to [0, 1].
    min_depth: float = 0.0
    max_depth: float = 10.0
    agent_radius: float = 0.1  # radius of the agent's disc, in metres
    agent_height: float = 1.5  # height of the agent, in metres (at least sensor_height)
    forward_step: float = 0.25  # distance of one move_forward, in metres
    turn_angle: float = 10.0  # angle of one turn_left or turn_right, in degrees
    max_episode_steps: int = 500  # steps after which an episode ends
    success_distance: float = 0.2  # a stop within this geodesic distance of the goal (metres) is a success
    # Scene families to draw scenes from: apartment-s, apartment, office, office-l.
    scene_families: tuple[str, ...] = SCENE_FAMILIES
    scenes_in_memory: int = 8  # scenes the training stream holds at once; one is retired and replaced in turn
    episodes_per_scene: int = 25  # episode starts in the training stream between two scene replacements
    min_geodesic: float = 1.0  # shortest start-to-goal geodesic distance of a generated episode, metres
    max_geodesic: float = 30.0  # longest start-to-goal geodesic distance of a generated episode, metres
    explore_cell_size: float = 1.0  # side of the cells that Explore counts as visited, in metres
    # The seen_map sensor (navzoo.sim.map_sensor): squares per side of its egocentric crop, and their size.
    seen_map_size: int = 32
    seen_map_cell: float = 0.5  # side of one square of the seen_map sensor, in metres
    # A habitat PointNav dataset file (.json.gz) to read the episodes from instead of generating them.
    episodes_file: str | None = None
    # Scanned scenes (navzoo.sim.scans): habitat's `habitat.dataset.scenes_dir`, the folder an episode's
    # scene_id (a mesh path) is relative to, and the scene dataset config that orients its stages (None:
    # habitat's "default" dataset). With scenes_dir, episodes_file is a habitat PointNav dataset; without
    # one, the train split samples episodes by habitat's PointNav generator rules on every mesh below
    # scenes_dir (or the stages scene_dataset lists), scenes_in_memory of them loaded at a time.
    scenes_dir: str | None = None
    scene_dataset: str | None = None
    device: str = "cpu"  # where the simulator's tensors live: "cpu", "cuda" or "cuda:N"
    # Which kernels render and move the agents: "numba" (navzoo.sim.raycast_cpu and navzoo.sim.kernels, CPU
    # only), "torch" (tensor kernels, any device) or "auto": numba on the CPU, torch elsewhere. Both give the
    # same images and positions.
    renderer: str = "auto"
    # torch.compile the torch kernels (CUDA): faster steps after a one-off compile.
    compile: bool = False
    seed: int = 0  # seed of the training stream's scenes and of the episodes drawn in them

    def __post_init__(self):
        check_field_types(self)
        self.validate()

    def validate(self) -> None:
        one_of("task", self.task, TASKS)
        one_of("split", self.split, SPLITS)
        if not 1 <= self.num_envs <= MAX_NUM_ENVS:
            raise ConfigError("num_envs", self.num_envs, f"an integer in 1 .. {MAX_NUM_ENVS}")
        for sensor in self.sensors:
            one_of("sensors", sensor, SENSORS)
        if len(set(self.sensors)) != len(self.sensors):
            raise ConfigError("sensors", self.sensors, "distinct names from " + ", ".join(SENSORS))
        if any(not 1 <= r <= MAX_RESOLUTION for r in self.resolution):
            raise ConfigError(
                "resolution", self.resolution, f"(height, width), integers in 1 .. {MAX_RESOLUTION}"
            )
        if not 0 < self.hfov < 180:
            raise ConfigError("hfov", self.hfov, "degrees in (0, 180)")
        if not 0 < self.sensor_height < 2.5:
            raise ConfigError("sensor_height", self.sensor_height, "metres in (0, 2.5), below the ceiling")
        if not 0 <= self.min_depth < self.max_depth:
            raise ConfigError("max_depth", self.max_depth, f"metres greater than min_depth={self.min_depth}")
        if not 0 < self.agent_radius < 0.5:
            raise ConfigError("agent_radius", self.agent_radius, "metres in (0, 0.5)")
        if not self.sensor_height <= self.agent_height:
            raise ConfigError(
                "agent_height", self.agent_height, f"at least sensor_height={self.sensor_height}"
            )
        for name in ("forward_step", "turn_angle", "success_distance", "explore_cell_size", "seen_map_cell"):
            if getattr(self, name) <= 0:
                raise ConfigError(name, getattr(self, name), "a positive number")
        for name in ("max_episode_steps", "scenes_in_memory", "episodes_per_scene"):
            if getattr(self, name) < 1:
                raise ConfigError(name, getattr(self, name), "a positive integer")
        if not self.scene_families:
            raise ConfigError(
                "scene_families", self.scene_families, "a non-empty tuple of " + str(SCENE_FAMILIES)
            )
        for family in self.scene_families:
            one_of("scene_families", family, SCENE_FAMILIES)
        if not 0 < self.min_geodesic < self.max_geodesic:
            raise ConfigError(
                "min_geodesic", self.min_geodesic, f"metres in (0, max_geodesic={self.max_geodesic})"
            )
        if not 1 <= self.seen_map_size <= MAX_SEEN_MAP_SIZE:
            raise ConfigError("seen_map_size", self.seen_map_size, f"an integer in 1 .. {MAX_SEEN_MAP_SIZE}")
        _check_device(self.device)
        self._check_scenes()
        one_of("renderer", self.renderer, RENDERERS)
        if SEEN_MAP in self.sensors and "depth" not in self.sensors:
            raise ConfigError(
                "sensors", self.sensors, f"a list with 'depth' too: {SEEN_MAP} maps what depth shows"
            )
        if SEEN_MAP in self.sensors and not self.device.startswith("cpu"):
            raise ConfigError("device", self.device, f"'cpu' for the {SEEN_MAP} sensor (numba kernels)")
        if self.renderer == "numba" and not self.device.startswith("cpu"):
            raise ConfigError("renderer", self.renderer, "'auto' or 'torch' on CUDA (numba is CPU-only)")

    def _check_scenes(self) -> None:
        """scenes_dir and scene_dataset: scanned scenes run the episodes of a habitat PointNav file (a task
        without a goal takes their starts), or, training without one, episodes sampled on the meshes of
        scenes_dir (navzoo.sim.scans.episode_sampler)."""
        if self.scene_dataset is not None:
            if self.scenes_dir is None:
                raise ConfigError(
                    "scene_dataset",
                    self.scene_dataset,
                    "None unless scenes_dir is set (it orients its meshes)",
                )
            if not self.scene_dataset.endswith(".scene_dataset_config.json"):
                raise ConfigError(
                    "scene_dataset", self.scene_dataset, "a path to a *.scene_dataset_config.json"
                )
        if self.scenes_dir is None:
            return
        if not self.scenes_dir:
            raise ConfigError("scenes_dir", self.scenes_dir, "a folder of scene meshes, or None")


def _check_device(device: str) -> None:
    import torch  # here, not at the top: the command line reads this module's names without torch

    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ConfigError("device", device, "'cpu', 'cuda' or 'cuda:N'") from exc
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError("device", device, "'cpu' (no CUDA device is available on this machine)")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ConfigError("device", device, f"cuda:0 .. cuda:{torch.cuda.device_count() - 1}")
    elif dev.type != "cpu":
        raise ConfigError("device", device, "'cpu', 'cuda' or 'cuda:N'")
