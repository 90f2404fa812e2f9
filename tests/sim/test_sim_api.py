"""BatchSim API: configuration errors, determinism, devices, scene pools and episode files."""

import gzip
import json

import numpy as np
import pytest
import torch

from navzoo.errors import ConfigError, EpisodeError, NavzooError
from navzoo.sim import BatchSim, SimConfig, load_episodes, save_episodes, split_episodes
from navzoo.sim.episodes import build_assets
from navzoo.sim.scenes import generate_scene, split_scene_ids


@pytest.mark.parametrize(
    ("field", "value", "hint"),
    [
        ("resolution", (-64, 64), "integers in 1 .. 4096"),
        ("resolution", (64,), "a list of 2 integers"),
        ("task", "objectnav", "'pointnav', 'flee', 'explore'"),
        ("split", "minival", "'train', 'val', 'test'"),
        ("num_envs", 0, "an integer in 1 .. "),
        ("num_envs", 2.5, "an integer (got float)"),
        ("sensors", ("lidar",), "'depth', 'rgb'"),
        ("device", "cuda:7" if torch.cuda.is_available() else "cuda", "cpu"),
        ("device", "tpu", "'cpu', 'cuda'"),
        ("scene_families", ("castle",), "apartment"),
        ("hfov", 0, "(0, 180)"),
    ],
)
def test_invalid_configuration_names_the_field_and_allowed_values(field, value, hint):
    with pytest.raises(ConfigError) as excinfo:
        SimConfig(**{field: value})
    message = str(excinfo.value)
    assert field in message and hint in message


def test_unknown_config_key_is_reported():
    with pytest.raises(ConfigError, match="resolutoin"):
        SimConfig.from_dict({"resolutoin": (64, 64)})


def test_bad_actions_are_reported():
    sim = BatchSim(SimConfig(num_envs=2, sensors=()))
    sim.reset()
    with pytest.raises(NavzooError, match="shape"):
        sim.step(torch.zeros(3, dtype=torch.long))
    with pytest.raises(NavzooError, match="turn_right"):
        sim.step(torch.tensor([1, 7]))


def _rollout(config: SimConfig, steps: int = 60):
    sim = BatchSim(config)
    frames = [sim.reset()]
    generator = torch.Generator().manual_seed(0)
    metrics = []
    for _ in range(steps):
        obs, reward, done, _info = sim.step(torch.randint(0, 4, (config.num_envs,), generator=generator))
        frames.append(obs)
        metrics.append((reward.cpu(), done.cpu()))
    sim.close()
    return frames, metrics


def test_same_seed_gives_identical_observations_and_metrics():
    config = SimConfig(num_envs=4, resolution=(32, 32), sensors=("depth", "rgb"), seed=7)
    a_frames, a_metrics = _rollout(config)
    b_frames, b_metrics = _rollout(config)
    for fa, fb in zip(a_frames, b_frames, strict=True):
        for key in fa:
            assert torch.equal(fa[key], fb[key])
    for (ra, da), (rb, db) in zip(a_metrics, b_metrics, strict=True):
        assert torch.equal(ra, rb) and torch.equal(da, db)
    c_frames, _ = _rollout(config.replace(seed=8))
    assert not torch.equal(a_frames[0]["depth"], c_frames[0]["depth"])


def test_per_environment_seeds_reproduce_each_environment():
    sim = BatchSim(SimConfig(num_envs=3, resolution=(16, 16)))
    first = sim.reset(seed=[11, 12, 13])["depth"].clone()
    again = sim.reset(seed=[99, 12, 98])["depth"]
    assert torch.equal(first[1], again[1])
    assert not torch.equal(first[0], again[0])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device to compare with CPU")
def test_cpu_and_cuda_agree():
    config = SimConfig(num_envs=4, resolution=(32, 32), sensors=("depth", "rgb"), seed=5)
    cpu_frames, _ = _rollout(config, steps=20)
    gpu_frames, _ = _rollout(config.replace(device="cuda"), steps=20)
    for fc, fg in zip(cpu_frames, gpu_frames, strict=True):
        assert torch.allclose(fc["depth"], fg["depth"].cpu(), atol=1e-4)
        assert (fc["rgb"].int() - fg["rgb"].cpu().int()).abs().float().mean() < 1.0


def test_training_pool_rotates_scenes_without_stalling():
    config = SimConfig(
        num_envs=8,
        sensors=(),
        scenes_in_memory=2,
        episodes_per_scene=4,
        max_episode_steps=20,
        scene_families=("apartment-s",),
    )
    sim = BatchSim(config)
    sim.reset()
    seen = {a.scene.scene_id for a in sim.pool.assets}
    for _ in range(200):
        sim.step(torch.full((8,), 2))
        seen |= {a.scene.scene_id for a in sim.pool.assets}
    sim.close()
    assert len(seen) >= 4
    assert all(sid.startswith("apartment-s/train/") for sid in seen)


def test_splits_are_disjoint_and_episode_sets_reproducible():
    families = ("apartment-s", "office")
    val, test = set(split_scene_ids("val", families)), set(split_scene_ids("test", families))
    assert val and test and not val & test
    a = split_episodes("val", families, 5, 0.1, 1.0, 30.0)
    b = split_episodes("val", families, 5, 0.1, 1.0, 30.0)
    assert a == b
    for ep in a:
        assert 1.0 <= ep.geodesic_distance <= 30.0
        assert ep.geodesic_distance >= ep.euclidean_distance - 1e-4
    ratios = np.array([e.geodesic_distance / e.euclidean_distance for e in a])
    assert (ratios >= 1.1).mean() > 0.5  # most episodes are not straight lines


def test_generated_scenes_are_deterministic_and_differ_in_size():
    a, b = generate_scene("office/val/00002"), generate_scene("office/val/00002")
    assert np.array_equal(a.heights, b.heights) and np.array_equal(a.materials, b.materials)
    small, large = generate_scene("apartment-s/val/00000"), generate_scene("office-l/val/00000")
    assert large.heights.size > 10 * small.heights.size
    assert len({round(float(h), 2) for h in np.unique(large.heights)}) > 5  # varied furniture heights


def test_habitat_json_round_trip(tmp_path):
    episodes = split_episodes("test", ("apartment",), 3, 0.1, 1.0, 30.0)
    path = tmp_path / "test.json.gz"
    save_episodes(episodes, path)
    with gzip.open(path, "rt") as f:
        raw = json.load(f)["episodes"][0]
    assert set(raw) >= {"episode_id", "scene_id", "start_position", "start_rotation", "goals", "info"}
    assert len(raw["start_position"]) == 3 and len(raw["start_rotation"]) == 4
    loaded = load_episodes(path)
    for old, new in zip(episodes, loaded, strict=True):
        assert old.scene_id == new.scene_id
        assert np.allclose(old.start, new.start, atol=1e-6) and np.allclose(old.goal, new.goal, atol=1e-6)
        assert np.isclose(np.cos(old.heading), np.cos(new.heading), atol=1e-6)
        assert np.isclose(np.sin(old.heading), np.sin(new.heading), atol=1e-6)
    sim = BatchSim(SimConfig(num_envs=2, sensors=(), episodes_file=str(path)))
    sim.reset()
    assert torch.allclose(sim.pos[0], torch.tensor(episodes[0].start))


def test_unusable_episode_files_and_scenes_are_reported(tmp_path):
    with pytest.raises(EpisodeError, match="does not exist"):
        load_episodes(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"episodes": [{"scene_id": "x"}]}')
    with pytest.raises(EpisodeError, match=r"episode 0 of .*bad.json: it lacks 'episode_id'"):
        load_episodes(bad)
    for bad_id in ("castle/val/00000", "apartment/val/¹", "apartment/val"):
        with pytest.raises(ConfigError, match="scene_id"):
            generate_scene(bad_id)
    # a scene that cannot hold an episode in the distance range is reported, not looped on forever
    with pytest.raises(EpisodeError, match="widen"):
        build_assets(generate_scene("apartment-s/val/00000"), 0.1, 25.0, 30.0, seed=0)
