"""Evaluating trained models: PolicyAgent, saved replays, and `navzoo eval` on model folders."""

import gzip
import json
import re

import numpy as np
import pytest
import torch
from PIL import Image

import navzoo
from navzoo.agents.baselines import make_baseline
from navzoo.agents.policy_agent import PolicyAgent, check_sim_config
from navzoo.cli.main import main
from navzoo.errors import ConfigError, NavzooError, ReplayError
from navzoo.evaluation import evaluate
from navzoo.evaluation.replay import load_replay, make_replay, render_replay, render_replay_frame, save_replay
from navzoo.models.weights import save_pretrained
from navzoo.sim import BatchSim, SimConfig

RESOLUTION = (32, 32)
EPISODES = 8

pytestmark = pytest.mark.usefixtures("one_thread")


def tiny_depth_model():
    # BPS's SE-ResNet9 shrunk to a few hundred thousand parameters: fast enough for many CPU steps.
    return navzoo.create_model("bps-se-resnet9", resolution=RESOLUTION, hidden_size=64, base_planes=16)


@pytest.fixture(scope="module")
def policy():
    torch.manual_seed(0)
    return tiny_depth_model().eval()


@pytest.fixture(scope="module")
def model_folders(tmp_path_factory):
    """Two saved models, named as training-run folders are: a depth agent and a blind one."""
    root = tmp_path_factory.mktemp("models")
    torch.manual_seed(1)
    depth = save_pretrained(tiny_depth_model(), root / "tiny-depth")
    blind = save_pretrained(navzoo.create_model("pointnav-blind", hidden_size=32), root / "tiny-blind")
    return depth, blind


@pytest.fixture(scope="module")
def sim():
    # A short step limit: an untrained deterministic policy may never stop.
    config = SimConfig(
        split="val",
        num_envs=4,
        resolution=RESOLUTION,
        scene_families=("apartment-s",),
        max_episode_steps=25,
    )
    sim = BatchSim(config)
    yield sim
    sim.close()


def run(sim, policy, deterministic=False, seed=0, agent=None):
    agent = agent or PolicyAgent(policy, sim.num_envs, deterministic=deterministic, seed=seed)
    return evaluate(sim, agent, EPISODES, progress=False)


def all_actions(results) -> list[list[int]]:
    return [r.actions.tolist() for r in results]


def test_deterministic_evaluation_is_reproducible(sim, policy):
    first, second = run(sim, policy, deterministic=True), run(sim, policy, deterministic=True)
    assert all_actions(first) == all_actions(second)
    assert [r.spl for r in first] == [r.spl for r in second]


def test_sampled_actions_follow_the_seed(sim, policy):
    same = all_actions(run(sim, policy, seed=3))
    assert same == all_actions(run(sim, policy, seed=3))
    assert same != all_actions(run(sim, policy, seed=4))


def test_evaluation_records_rewards_values_and_action_probabilities(sim, policy):
    for result in run(sim, policy):
        steps = result.num_steps
        assert result.rewards.shape == (steps,) and result.values.shape == (steps,)
        assert result.action_probs.shape == (steps, 4)
        np.testing.assert_allclose(result.action_probs.sum(1), 1, atol=1e-5)
        assert result.rewards.sum() == pytest.approx(result.episode_return, abs=1e-4)
    baseline = evaluate(sim, make_baseline("goal-follower", sim), 2, progress=False)[0]
    assert baseline.values is None and baseline.action_probs is None
    assert baseline.rewards.shape == (baseline.num_steps,)


class Recorder:
    """Wraps an agent and keeps environment 0's observations until its first episode ends."""

    def __init__(self, agent):
        self.agent, self.frames, self.done = agent, [], False

    def act(self, obs, first):
        self.done = self.done or (bool(first[0]) and bool(self.frames))
        if not self.done:
            self.frames.append({k: v[0].clone() for k, v in obs.items()})
        return self.agent.act(obs, first)


def test_replay_round_trip_and_rerendered_frames_match_what_the_agent_saw(sim, policy, tmp_path):
    recorder = Recorder(PolicyAgent(policy, sim.num_envs, seed=5))
    result = run(sim, policy, agent=recorder)[0]  # episode 0 runs in environment 0 first
    replay = make_replay(sim, result, "tiny", {"name": "tiny"}, "sampled")
    loaded = load_replay(save_replay(tmp_path / "episode-0.replay.json.gz", replay))

    assert loaded.sim_config == replay.sim_config and loaded.episode == sim.episodes[0]
    assert (loaded.agent, loaded.model, loaded.action_mode) == ("tiny", {"name": "tiny"}, "sampled")
    assert loaded.metrics == result.metrics() and loaded.num_steps == result.num_steps
    for name in ("positions", "headings", "actions", "rewards", "values", "action_probs"):
        np.testing.assert_array_equal(getattr(loaded, name), getattr(result, name), err_msg=name)

    frames = render_replay(loaded, range(result.num_steps))
    assert len(recorder.frames) == result.num_steps
    for step, seen in enumerate(recorder.frames):
        for key, value in seen.items():
            torch.testing.assert_close(frames[key][step], value, rtol=0, atol=0, msg=f"{key} at {step}")
    first = render_replay_frame(loaded, 0)
    assert torch.equal(first["depth"], recorder.frames[0]["depth"])


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"not a replay", "not a gzip-compressed JSON replay"),
        (
            gzip.compress(b'{"format": "navzoo-replay", "form')[:-6],
            "not a gzip-compressed JSON replay",
        ),
        (gzip.compress(b'{"format": "navzoo-policy"}'), "not a navzoo replay"),
        (gzip.compress(b'{"format": "navzoo-replay", "format_version": 99}'), "upgrade navzoo"),
        (gzip.compress(b'{"format": "navzoo-replay", "format_version": 1}'), "damaged replay"),
    ],
    # Fixed ids: pytest-xdist's workers must collect the same names (gzip's header holds the time).
    ids=["plain-text", "truncated-gzip", "another-format", "newer-version", "damaged"],
)
def test_bad_replay_files_raise_a_helpful_error(tmp_path, content, message):
    path = tmp_path / "x.replay.json.gz"
    path.write_bytes(content)
    with pytest.raises(ReplayError, match=message):
        load_replay(path)


def test_missing_replay_file_says_how_to_make_one(tmp_path):
    with pytest.raises(NavzooError, match=r"does not exist.*saves replays"):
        load_replay(tmp_path / "missing.replay.json.gz")


def test_eval_command_on_model_folders(model_folders, tmp_path, capsys):
    depth, blind = model_folders
    out = tmp_path / "eval"
    argv = ["eval", str(depth), str(blind), "--episodes", str(EPISODES), "--num-envs", "8"]
    argv += ["--scene-families", "apartment-s", "--replays", "2", "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "tiny-depth" in printed and "tiny-blind" in printed and "geodesic" in printed

    report = json.loads((out / "eval.json").read_text())
    entry = report["agents"]["tiny-depth"]
    assert entry["action_mode"] == "sampled"
    assert entry["sim"] == {"sensors": ["depth"], "resolution": [32, 32]}
    assert report["agents"]["tiny-blind"]["sim"]["sensors"] == []
    summary = entry["summary"]
    assert summary["episodes"] == EPISODES and "spl_ci95" in summary
    bins = summary["by_distance"]
    assert sum(b["episodes"] for b in bins) == EPISODES
    assert all({"success", "success_ci95", "spl", "spl_ci95", "min_geodesic"} <= set(b) for b in bins)
    assert "by scene family" not in printed  # one family: the breakdown would repeat the totals
    family = summary["by_family"]["apartment-s"]
    assert list(summary["by_family"]) == ["apartment-s"] and family["episodes"] == EPISODES
    assert family["spl"] == summary["spl"] and family["success"] == summary["success"]
    with Image.open(out / "spl_by_distance.png") as image:
        assert image.width > 400 and image.height > 200

    assert entry["replays"] == [
        "replays/tiny-depth/episode-0.replay.json.gz",
        "replays/tiny-depth/episode-1.replay.json.gz",
    ]
    replay = load_replay(out / entry["replays"][1])
    assert replay.agent == "tiny-depth" and replay.model["architecture"]["resolution"] == [32, 32]
    assert replay.episode_index == 1 and replay.values is not None
    assert replay.metrics == entry["episodes"][1]


def test_eval_command_reports_a_missing_model_folder(tmp_path, capsys):
    code = main(["eval", str(tmp_path / "no-such-run"), "--episodes", "2", "--out", str(tmp_path)])
    error = capsys.readouterr().err
    assert code == 2 and "no-such-run" in error and "config.json" in error


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--map-episode", "50"], r"map_episode=50.*0 \.\. 1.*the --map-episode option"),
        (["--episodes", "0"], "episodes=0"),
    ],
)
def test_eval_command_refuses_episode_numbers_out_of_range(tmp_path, capsys, flags, message):
    """Before, --map-episode 50 with 2 episodes drew another episode and labelled it 50."""
    code = main(["eval", "goal-follower", "--episodes", "2", *flags, "--out", str(tmp_path / "out")])
    assert code == 2 and re.search(message, capsys.readouterr().err)
    assert not (tmp_path / "out").exists()  # refused before anything ran


def test_eval_command_reports_resolution_mismatch(model_folders, tmp_path, capsys):
    depth, _ = model_folders
    code = main(["eval", str(depth), "--resolution", "64", "--episodes", "2", "--out", str(tmp_path)])
    error = capsys.readouterr().err
    assert code == 2 and "32x32" in error and "(the --resolution option)" in error


def test_sensor_mismatch_says_which_sensors_to_pass(policy):
    with pytest.raises(ConfigError, match="give sensors depth"):
        check_sim_config(policy.config, SimConfig(split="val", sensors=("rgb",), resolution=RESOLUTION))
