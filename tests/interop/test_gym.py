"""The gymnasium environments, against gymnasium's own conventions, checker and wrappers."""

import subprocess
import sys

import av
import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode
from gymnasium.wrappers import RecordVideo, RenderCollection
from gymnasium.wrappers.vector import DictInfoToList, NormalizeReward, RecordEpisodeStatistics

import navzoo  # noqa: F401 - registers the navzoo/* environment ids
from navzoo.errors import ConfigError
from navzoo.interop.gym_env import ActionError, NavEnv, NavVectorEnv
from navzoo.sim import SimConfig

TURN_LEFT = 2


def _vector(autoreset_mode=AutoresetMode.NEXT_STEP, num_envs=3, steps=4, **overrides) -> NavVectorEnv:
    config = SimConfig(num_envs=num_envs, resolution=(16, 16), max_episode_steps=steps, **overrides)
    return NavVectorEnv(config, autoreset_mode=autoreset_mode)


def test_single_env_passes_gymnasium_checker_with_rendering():
    env = gymnasium.make(
        "navzoo/PointNav-v0",
        resolution=(32, 32),
        sensors=("depth", "rgb"),
        max_episode_steps=30,
        render_mode="rgb_array",
    ).unwrapped
    assert isinstance(env, NavEnv)
    check_env(env)
    env.reset(seed=0)
    frame = env.render()
    assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3
    assert frame.shape[1] > 2 * frame.shape[0]  # depth and RGB views beside the map


def test_the_module_prefix_makes_the_environments_from_a_fresh_interpreter():
    code = (
        "import gymnasium\n"
        "env = gymnasium.make('navzoo:navzoo/PointNav-v0', resolution=(16, 16))\n"
        "print(env.spec.max_episode_steps, sorted(env.reset(seed=0)[0]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == "500 ['depth', 'pointgoal_with_gps_compass']"


def test_registered_ids_make_all_three_tasks():
    for name, keys in (
        ("PointNav", {"depth", "pointgoal_with_gps_compass"}),
        ("Flee", {"depth"}),
        ("Explore", {"depth"}),
    ):
        env = gymnasium.make(f"navzoo/{name}-v0", resolution=(16, 16))
        assert env.spec.max_episode_steps == 500
        obs, _ = env.reset(seed=0)
        assert set(obs) == keys
        assert env.observation_space.contains(obs)
        env.close()


def test_make_vec_returns_the_batch_simulator_as_one_vector_env():
    env = gymnasium.make_vec(
        "navzoo/Flee-v0", num_envs=5, vectorization_mode="vector_entry_point", resolution=(16, 16)
    )
    assert isinstance(env, NavVectorEnv) and env.num_envs == 5 and env.sim.num_envs == 5
    assert env.sim.config.task == "flee"
    obs, _ = env.reset(seed=1)
    assert env.observation_space.contains(obs)
    env.close()


@pytest.mark.parametrize("steps", [6, 503])  # below and above the simulator's default limit of 500
def test_make_and_make_vec_end_episodes_at_max_episode_steps_with_the_same_metrics(steps):
    """gymnasium.make hands max_episode_steps to its TimeLimit wrapper, never to the environment; the
    single environment must still end its episodes there with their metrics, as make_vec's does."""
    kwargs = {"resolution": (16, 16), "max_episode_steps": steps}
    env = gymnasium.make("navzoo/PointNav-v0", **kwargs)
    vector = gymnasium.make_vec(
        "navzoo/PointNav-v0", num_envs=1, vectorization_mode="vector_entry_point", **kwargs
    )
    env.reset(seed=0)
    vector.reset(seed=0)
    for step in range(1, steps + 1):
        _, _, terminated, truncated, info = env.step(TURN_LEFT)
        _, _, _, vector_truncated, vector_info = vector.step(np.array([TURN_LEFT]))
        assert truncated == vector_truncated[0] == (step == steps) and not terminated
    assert {"success", "spl", "distance_to_goal", "path_length"} <= set(info)
    for key in ("num_steps", "distance_to_goal", "geodesic_distance", "episode_return"):
        assert info[key] == pytest.approx(vector_info["final_info"][key][0])  # the same episode, the same end
    assert info["num_steps"] == steps
    env.close()
    vector.close()


def test_next_step_autoreset_shows_the_last_observation_then_the_first_of_the_next_episode():
    env = _vector()
    assert env.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    env.reset(seed=3)
    for _ in range(4):
        obs, reward, terminated, truncated, info = env.step(np.full(3, TURN_LEFT))
    assert truncated.all() and not terminated.any()
    # The last observation of the episode, at the pose where it ended; the metrics in final_info.
    pose = (env.sim.pos.clone(), env.sim.heading.clone())
    assert info["_final_info"].all() and set(info["final_info"]) >= {"success", "spl", "_success"}
    assert "final_obs" not in info
    first = {k: v.clone() for k, v in env.sim.observe().items()}
    assert not np.array_equal(obs["depth"], first["depth"].numpy())
    # The next step ignores the actions and shows the first observation of the new episode.
    obs, reward, terminated, truncated, info = env.step(np.full(3, 1))
    assert (reward == 0).all() and not (terminated | truncated).any()
    assert np.array_equal(obs["depth"], first["depth"].numpy())
    assert np.array_equal(env.sim.pos, pose[0]) and np.array_equal(env.sim.heading, pose[1])
    assert (env.sim.steps == 0).all()
    env.step(np.full(3, 1))
    assert (env.sim.steps == 1).all()


def test_same_step_autoreset_returns_final_observations():
    env = _vector(AutoresetMode.SAME_STEP)
    obs, _ = env.reset(seed=3)
    for _ in range(4):
        obs, _reward, terminated, truncated, infos = env.step(np.full(3, TURN_LEFT))
    assert truncated.all() and not terminated.any()
    assert infos["_final_obs"].all() and infos["_final_info"].all()
    assert env.single_observation_space.contains(infos["final_obs"][0])
    assert set(infos["final_info"]) >= {"success", "spl", "path_length"}
    assert env.observation_space.contains(obs) and (env.sim.steps == 0).all()


def test_final_observations_are_the_episodes_own_in_every_sensor():
    """An episode's final observation is what it would have seen had it gone on: its own scene, goal and
    seen_map, though the environment has already moved to the next episode (and here, the next scene)."""
    sensors = {"sensors": ("depth", "seen_map"), "seen_map_size": 16, "episodes_per_scene": 1}
    ending = _vector(AutoresetMode.SAME_STEP, num_envs=2, steps=4, **sensors)
    going_on = _vector(AutoresetMode.SAME_STEP, num_envs=2, steps=5, **sensors)
    ending.reset(seed=5)
    going_on.reset(seed=5)
    for _ in range(4):
        _, _, _, truncated, infos = ending.step(np.full(2, TURN_LEFT))
        obs, *_ = going_on.step(np.full(2, TURN_LEFT))
    assert truncated.all() and (ending.sim.slot != going_on.sim.slot).any()
    for i in range(2):
        for key, value in obs.items():
            assert np.array_equal(infos["final_obs"][i][key], value[i]), key
    assert infos["final_obs"][0]["seen_map"][..., 1].any()  # the cell it stands in


def test_disabled_autoreset_waits_for_a_masked_reset():
    env = _vector(AutoresetMode.DISABLED)
    env.reset(seed=3)
    for _ in range(4):
        env.step(np.full(3, TURN_LEFT))
    _, reward, terminated, truncated, _ = env.step(np.full(3, 1))
    assert (reward == 0).all() and not (terminated | truncated).any() and (env.sim.steps == 0).all()
    mask = np.array([True, False, False])
    env.reset(options={"reset_mask": mask})
    env.step(np.full(3, 1))
    assert env.sim.steps.tolist() == [1, 0, 0]


BAD_ACTIONS = [1.9, True, np.float32(1.0), np.bool_(True), 4, -1, np.array([1]), "1", None]


@pytest.mark.parametrize("action", BAD_ACTIONS, ids=repr)
def test_single_env_refuses_what_is_not_an_integer_action(action):
    """No rounding: step(1.9) or step(True) is a bug in the caller, as the vector env says too."""
    env = gymnasium.make("navzoo/PointNav-v0", resolution=(16, 16), sensors=())
    env.reset(seed=0)
    with pytest.raises(ActionError, match=r"expected an integer action, each one of 0 \(stop\), 1 \(move"):
        env.step(action)
    with pytest.raises(gymnasium.error.InvalidAction):  # gymnasium's name for it
        env.step(action)


@pytest.mark.parametrize("batch", [[1.9, 1.0], [True, False], [4, 1], [[1], [2, 3]], np.ones((2, 1), int)])
def test_vector_env_refuses_the_same_with_the_same_check(batch):
    env = _vector(num_envs=2)
    env.reset(seed=0)
    with pytest.raises(ActionError, match=r"expected integer actions of shape \(2,\), each one of 0 \(stop"):
        env.step(batch)


@pytest.mark.parametrize("action", [1, np.int64(1), np.uint8(1), np.array(1), np.array(1, dtype=np.int16)])
def test_integer_actions_of_any_integer_type_are_taken(action):
    env = NavEnv(SimConfig(resolution=(16, 16), sensors=()))
    env.reset(seed=0)
    start = env.sim.pos.clone()
    env.step(action)
    assert env.sim.steps.tolist() == [1] and not np.allclose(env.sim.pos, start)


def test_make_with_num_envs_points_to_make_vec():
    with pytest.raises(ConfigError, match=r"num_envs=8: .* gymnasium.make_vec\(env_id, num_envs=N"):
        gymnasium.make("navzoo/PointNav-v0", resolution=(16, 16), num_envs=8)


def test_unknown_keywords_are_named_alone_with_the_field_meant():
    with pytest.raises(ConfigError) as error:
        gymnasium.make("navzoo/PointNav-v0", resolution=(16, 16), num_env=8)
    message = str(error.value)
    assert message.startswith("invalid keyword argument='num_env': did you mean 'num_envs'?")
    assert "resolution'" not in message and "'task'" not in message  # valid keywords are not called invalid
    with pytest.raises(
        ConfigError, match=r"\['resolutoin', 'qqqq'\]: .*did you mean 'resolution' for 'resol"
    ):
        gymnasium.make("navzoo/PointNav-v0", resolutoin=(16, 16), qqqq=1)


def test_reset_options_are_checked_not_ignored():
    env = _vector()
    with pytest.raises(ConfigError, match="reset_mask"):
        env.reset(options={"start_position": [1, 2]})
    with pytest.raises(ConfigError, match="shape"):
        env.reset(options={"reset_mask": np.ones(2, dtype=bool)})
    with pytest.raises(ConfigError, match="options"):
        NavEnv(SimConfig(resolution=(16, 16))).reset(options={"reset_mask": True})
    # A reset mask starts new episodes only where it says.
    env.reset(seed=0)
    env.step(np.full(3, 1))
    env.reset(options={"reset_mask": np.array([False, True, False])})
    assert env.sim.steps.tolist() == [1, 0, 1]


def test_gymnasium_vector_wrappers_run_on_it():
    env = DictInfoToList(NormalizeReward(RecordEpisodeStatistics(_vector(num_envs=2, steps=5))))
    env.reset(seed=0)
    episodes = []
    for _ in range(12):
        *_, infos = env.step(np.array([1, TURN_LEFT]))
        episodes += [info["episode"] for info in infos if "episode" in info]
    assert len(episodes) == 4 and all(int(e["l"][()]) == 5 for e in episodes)


def test_render_collection_gathers_a_frame_per_step():
    env = RenderCollection(
        NavEnv(SimConfig(resolution=(16, 16), max_episode_steps=3), render_mode="rgb_array")
    )
    env.reset(seed=0)
    for _ in range(3):
        env.step(TURN_LEFT)
    frames = env.render()
    assert len(frames) == 4 and all(f.shape == frames[0].shape for f in frames)
    assert not np.array_equal(frames[0], frames[1])  # the map's arrow turned


def test_record_video_writes_each_episode_as_an_mp4(tmp_path):
    # gymnasium's RecordVideo (moviepy, in the test extra) over render(): one file per episode, every frame.
    env = RecordVideo(
        gymnasium.make(
            "navzoo/PointNav-v0", resolution=(32, 32), max_episode_steps=6, render_mode="rgb_array"
        ),
        str(tmp_path),
        episode_trigger=lambda episode: True,
        disable_logger=True,
    )
    env.reset(seed=0)
    done = False
    while not done:
        _, _, terminated, truncated, _ = env.step(TURN_LEFT)
        done = terminated or truncated
    size = env.render().shape
    env.close()
    (video,) = tmp_path.glob("*.mp4")
    with av.open(str(video)) as container:
        frames = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    assert len(frames) == 7 and frames[0].shape == size  # the reset frame and six steps
