"""One episode for the demo: pick it from a split or an episodes file (`navzoo demo --episodes-file`, its
scenes navzoo's own or scanned meshes), run a baseline or a model on it, and keep it as a replay.

Evaluation chooses the simulator (navzoo.evaluation.sim_config_for): models run with the sensors and
resolution they were built for, and only on the task they were trained for; baselines with 64x64 depth.
Flee and Explore have no goal, so of the baselines only random and forward-only run there, with their
stop-at-the-goal check left out.
"""

import os
from functools import lru_cache
from pathlib import Path

from navzoo.agents.baselines import BASELINES, make_baseline
from navzoo.agents.policy_agent import PolicyAgent
from navzoo.demo.sources import MAX_RESOLUTION, Sources
from navzoo.errors import ConfigError, UnknownModelError
from navzoo.evaluation import AgentEntry, evaluate, sim_config_for
from navzoo.evaluation.replay import Replay, make_replay
from navzoo.models import PolicyArchitecture
from navzoo.names import ACTION_MODES
from navzoo.sim.batch_sim import BatchSim
from navzoo.sim.config import SimConfig
from navzoo.sim.episodes import Episode, generate_episodes, load_episodes, scene_assets
from navzoo.sim.scenes import SCENES_PER_SPLIT, scene_id, stable_seed
from navzoo.tasks import TASKS as TASK_OBJECTS
from navzoo.tasks import get_task
from navzoo.zoo.loader import load

# The tasks as the page shows them: "PointGoal" -> "pointnav".
TASKS = {task.label: name for name, task in TASK_OBJECTS.items()}


def task_id(task: str) -> str:
    """'PointGoal' -> 'pointnav'; task ids pass through."""
    task = TASKS.get(task, task)
    if task not in TASKS.values():
        raise ConfigError("task", task, (*TASKS, *TASKS.values()))
    return task


def num_episodes(config: SimConfig) -> int:
    """How many episodes there are to pick from: the episodes file's, else the split's (train numbers its
    unbounded scene stream the way val and test do)."""
    if config.episodes_file is not None:
        return len(file_episodes(config))
    return SCENES_PER_SPLIT[config.split] * len(config.scene_families) * config.episodes_per_scene


def file_episodes(config: SimConfig) -> tuple[Episode, ...]:
    """The episodes of config.episodes_file (on the meshes of config.scenes_dir where set), read again
    when the file, or a per-scene file of its content/ folder, changes."""
    assert config.episodes_file is not None
    path = Path(config.episodes_file)
    # A missing file is not an error here: load_episodes says so.
    files = [path, *sorted((path.parent / "content").glob("*.json.gz"))] if path.is_file() else []
    changed = tuple((str(f), f.stat().st_mtime_ns) for f in files)
    return _read_episodes(config.episodes_file, config.scenes_dir, changed)


@lru_cache(maxsize=4)
def _read_episodes(path: str, scenes_dir: str | None, changed: tuple) -> tuple[Episode, ...]:
    return tuple(load_episodes(path, scenes_dir=scenes_dir))


def pick_episode(config: SimConfig, index) -> Episode:
    """Episode `index` of the config's episodes file or split, equal to `episodes_for(config)[index]` for
    val and test, but only the episode's own scene is built (the whole val set takes seconds)."""
    count = num_episodes(config)
    if isinstance(index, float) and index.is_integer():
        index = int(index)
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
        raise ConfigError(
            "episode", index, f"an integer in 0 .. {count - 1} (episodes of {_episode_set(config)})"
        )
    if config.episodes_file is not None:
        return file_episodes(config)[index]
    # split_scene_ids interleaves the families, and each scene holds episodes_per_scene episodes.
    position, k = divmod(index, config.episodes_per_scene)
    number, family = divmod(position, len(config.scene_families))
    sid = scene_id(config.scene_families[family], config.split, number)
    assets = scene_assets(sid, config.agent_radius, config.min_geodesic, config.max_geodesic)
    return generate_episodes(assets, config.episodes_per_scene)[k]


def _episode_set(config: SimConfig) -> str:
    """What the episodes are called on the page: the episodes file by its name, or the split."""
    if config.episodes_file is not None:
        return os.path.basename(config.episodes_file)
    return f"the {config.split} split"


def episode_from_seed(config: SimConfig, seed: int) -> int:
    return stable_seed("demo-episode", config.split, seed) % num_episodes(config)


def load_agent(sources: Sources, choice: str, device: str = "cpu") -> AgentEntry:
    """A baseline, a zoo model (fetched into the cache on first use), or a model folder inside the --models
    roots."""
    if not isinstance(choice, str) or not choice.strip():
        raise UnknownModelError("no model chosen: pick a baseline, a zoo model or a model folder")
    if choice in BASELINES:
        return AgentEntry(choice, choice)
    if choice in sources.zoo_models():
        # A cached model loads with no request at all; the others are fetched now.
        local = choice in sources.local_zoo_models()
        return AgentEntry(choice, choice, load(choice, local_files_only=local, device=device))
    if not sources.models or not sources.names_a_folder(choice):
        raise UnknownModelError(
            f"unknown model {choice!r}: not a baseline ({', '.join(BASELINES)}), a zoo model with weights "
            "(navzoo.list_models(pretrained=True)) or a model folder under the --models folders"
        )
    folder = sources.model_folder(choice)
    return AgentEntry(folder.name, str(folder), load(folder, device=device))


def sim_config(
    agent: AgentEntry,
    task: str,
    split: str,
    seed: int = 0,
    device: str = "cpu",
    *,
    episodes_file: str | None = None,
    scenes_dir: str | None = None,
    scene_dataset: str | None = None,
) -> SimConfig:
    """One environment with the sensors the agent reads, as evaluation chooses them, running the episodes
    of `episodes_file` where given (on the scanned meshes of `scenes_dir`); ConfigError if the agent cannot
    do the task."""
    name = task_id(task)
    if agent.policy is not None:
        _check_camera(agent.label, agent.policy.config)
        if name != agent.policy.task:  # said in the page's words: pick the task
            trained_for = get_task(agent.policy.task).label
            raise ConfigError(
                "task",
                get_task(name).label,
                f"{trained_for}: model {agent.label!r} is a {trained_for} policy "
                f"(pick the {trained_for} task)",
            )
    return sim_config_for(
        agent,
        name,
        split,
        num_envs=1,
        seed=int(seed),
        device=device,
        episodes_file=episodes_file,
        scenes_dir=scenes_dir,
        scene_dataset=scene_dataset,
    )


def _check_camera(label: str, config: PolicyArchitecture) -> None:
    """Refuse, before running, a model whose cameras are larger than the demo shows."""
    if config.resolution is not None and max(config.resolution) > MAX_RESOLUTION:  # None: no camera
        raise ConfigError(
            "resolution",
            tuple(config.resolution),
            f"cameras up to {MAX_RESOLUTION}x{MAX_RESOLUTION} in the demo: model {label!r} was built "
            "for larger ones (evaluate it with `navzoo eval` instead)",
        )


def run_episode(
    agent: AgentEntry,
    task: str,
    split: str,
    episode=None,
    seed=0,
    mode: str = "sampled",
    device: str = "cpu",
    *,
    episodes_file: str | None = None,
    scenes_dir: str | None = None,
    scene_dataset: str | None = None,
) -> Replay:
    """Run `agent` on episode `episode` of the split (None: one picked by `seed`) and return its replay.
    With `episodes_file`, on one of its episodes instead, on the scanned meshes of `scenes_dir` (oriented by
    `scene_dataset`) where given.

    `seed` also seeds the agent (random baseline, sampled actions), as `navzoo eval --seed` does."""
    if mode not in ACTION_MODES:
        raise ConfigError("mode", mode, ACTION_MODES)
    seed = _integer("seed", seed)
    config = sim_config(
        agent,
        task,
        split,
        seed,
        device,
        episodes_file=episodes_file,
        scenes_dir=scenes_dir,
        scene_dataset=scene_dataset,
    )
    index = episode_from_seed(config, seed) if episode is None else episode
    chosen = pick_episode(config, index)
    index = int(index)
    sim = BatchSim(config, episodes=[chosen])
    try:
        model, action_mode = None, None
        if agent.policy is not None:
            runner = PolicyAgent(agent.policy, 1, deterministic=mode == "deterministic", seed=seed)
            model, action_mode = runner.describe(), runner.mode
        else:
            runner = make_baseline(agent.source, sim, seed=seed)
        result = evaluate(sim, runner, 1, progress=False)[0]
        replay = make_replay(sim, result, agent.label, model, action_mode)
    finally:
        sim.close()
    # The simulator held this one episode; the replay names it by its index in the split or file.
    replay.episode_index = index
    replay.metrics.update(episode_index=index)
    return replay


def _integer(name: str, value) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(name, value, "an integer")
    return value
