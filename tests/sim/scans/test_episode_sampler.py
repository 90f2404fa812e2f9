"""Training on a folder of meshes: habitat's PointNav generator rules (navzoo.sim.scans.episode_sampler) on
meshes the tests build and on navzoo's exported scenes, BatchSim's reproducible stream over them, exact
resume, and a tiny PPO run."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from navzoo.errors import ConfigError, EpisodeError, SceneError
from navzoo.interop.habitat_scenes import CONFIG_NAME, export_scenes
from navzoo.sim.batch_sim import BatchSim
from navzoo.sim.config import SimConfig
from navzoo.sim.scans.episode_sampler import EpisodeSampler, PointNavRules, island_radii
from navzoo.sim.scans.navmesh import build_navmesh
from navzoo.sim.scans.stage import load_stage
from tests.support import steps_after_a_resume_match

from . import meshes


@pytest.fixture(autouse=True)
def navmesh_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("NAVZOO_NAVMESH_CACHE", str(tmp_path_factory.getbasetemp() / "navmeshes"))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A folder of test meshes (.ply, y up): a room with boxes, two storeys joined by stairs, a ramp."""
    folder = tmp_path_factory.mktemp("meshes")
    meshes.fine_room(10, 0.5).export(folder / "a_room.ply")
    (folder / "sub").mkdir()
    meshes.stairs(0.15, ceiling=True).mesh().export(folder / "sub" / "b_stairs.ply")
    meshes.ramp(20).mesh().export(folder / "c_ramp.obj")
    return folder


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """Two of navzoo's val apartments exported as habitat scene meshes, with their scene dataset config."""
    out = tmp_path_factory.mktemp("export")
    export_scenes(out, split="val", families=("apartment-s",), count=2, episodes_per_scene=1)
    scenes = out / "scene_datasets"
    return {"scenes_dir": str(scenes), "scene_dataset": str(scenes / "navzoo" / CONFIG_NAME)}


def habitat_compatible(navmesh, source, target, keep_draw, rules: PointNavRules) -> bool:
    """habitat-lab's is_compatible_episode, written out as its loop runs it, for one pair of places."""
    s, t = navmesh.positions[source], navmesh.positions[target]
    euclid = float(np.linalg.norm(s - t))
    if abs(s[1] - t[1]) > rules.same_floor_height:
        return False
    d = navmesh.geodesic_distance(s, t[None])
    if not math.isfinite(d) or not rules.closest_dist_limit <= d <= rules.furthest_dist_limit:
        return False
    ratio = d / euclid
    if ratio < rules.geodesic_to_euclid_min_ratio and keep_draw > 20 * (ratio - 0.98) ** 2:
        return False
    return bool(navmesh.island_radius(s[None])[0] >= rules.island_radius_limit)


def test_vectorised_checks_match_habitats_rule_by_rule(built):
    navmesh = build_navmesh(load_stage(built / "sub" / "b_stairs.ply"))
    sampler, rules = EpisodeSampler(navmesh, "stairs"), PointNavRules()
    rng = np.random.default_rng(1)
    targets = rng.integers(navmesh.size, size=3)
    sources = rng.integers(navmesh.size, size=(3, 40))
    sources[:, :10] = targets[:, None] + rng.integers(-3, 3, size=(3, 10))  # some too near
    keep_draw = rng.random((3, 40))
    keep_draw[:, 25:] = 0.0  # these keep nearly straight episodes too
    taut = np.array(
        [
            [navmesh.geodesic_distance(navmesh.positions[s], navmesh.positions[[t]]) for s in row]
            for t, row in zip(targets, sources, strict=True)
        ]
    )
    ok = sampler._compatible(targets, sources, keep_draw, taut, taut)
    expected = [
        [habitat_compatible(navmesh, s, t, u, rules) for s, u in zip(row, draws, strict=True)]
        for t, row, draws in zip(targets, sources, keep_draw, strict=True)
    ]
    assert ok.tolist() == expected and 0 < ok.sum() < ok.size
    # The graph's distances bound the taut ones from above (over the stairs by far: the graph climbs each
    # riser, the taut path the flight's slope), so the first pass on them keeps every pair that passes.
    graph = np.stack([sampler.field(int(t))[row] for t, row in zip(targets, sources, strict=True)])
    assert (taut <= graph + 1e-5).all() and (graph > taut * 1.03).any()
    assert (sampler._compatible(targets, sources, keep_draw, graph) >= ok).all()


@pytest.mark.parametrize("name", ["a_room.ply", "sub/b_stairs.ply", "c_ramp.obj"])
def test_sampled_episodes_follow_every_rule_and_repeat(built, name):
    navmesh = build_navmesh(load_stage(built / name))
    sampler = EpisodeSampler(navmesh, name)
    episodes = [sampler.sample(np.random.default_rng([7, k])) for k in range(60)]
    radius = island_radii(navmesh)
    straight = 0
    for episode, field in episodes:
        s, g = episode.start, episode.goal
        assert abs(s[1] - g[1]) <= 0.5  # one floor
        assert navmesh.island_of(s[None])[0] == navmesh.island_of(g[None])[0]
        assert radius[navmesh.island_of(s[None])[0]] >= 1.5 and radius[navmesh.island_of(g[None])[0]] >= 1.5
        d = navmesh.geodesic_distance(s, g[None])
        assert 1.0 <= d <= 30.0 and d == pytest.approx(episode.geodesic_distance, abs=1e-5)
        assert d - 1e-5 <= field[episode.start_place] and field[episode.goal_place] == 0
        assert episode.euclidean_distance == pytest.approx(np.linalg.norm(s - g))
        assert 0 <= episode.yaw < 2 * math.pi
        straight += d / episode.euclidean_distance < 1.1
    assert straight < len(episodes)  # nearly-straight episodes are mostly rejected
    again = sampler.sample(np.random.default_rng([7, 3]))[0]
    assert np.array_equal(again.start, episodes[3][0].start) and again.yaw == episodes[3][0].yaw
    if name == "sub/b_stairs.ply":  # both storeys are used
        heights = {round(float(e.start[1])) for e, _ in episodes}
        assert heights == {0, 2}


def test_sampling_speed_is_reported(built):
    import time

    navmesh = build_navmesh(load_stage(built / "a_room.ply"))
    sampler, rng = EpisodeSampler(navmesh, "room"), np.random.default_rng(0)
    start = time.perf_counter()
    for _ in range(50):
        sampler.sample(rng)
    print(f"\n{50 / (time.perf_counter() - start):.0f} episodes/s on a {navmesh.size}-place navmesh")


def test_clear_errors_name_the_folder_or_the_mesh(built, tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(SceneError, match=r"no scene mesh in .*empty"):
        BatchSim(SimConfig(scenes_dir=str(tmp_path / "empty"), sensors=()))
    small = tmp_path / "small"
    small.mkdir()
    meshes.box_room(2.0, 2.0).mesh().export(small / "closet.ply")
    with pytest.raises(EpisodeError, match=r"closet\.ply: no island .* radius of at least 1\.5 m"):
        BatchSim(SimConfig(scenes_dir=str(small), sensors=())).reset()
    wall = tmp_path / "wall"
    wall.mkdir()
    meshes.Builder().quad((0, 0, 0), (4, 0, 0), (0, 3, 0), (0, 0, 1)).mesh().export(wall / "wall.ply")
    with pytest.raises(SceneError, match=r"wall\.ply has no navigable floor"):
        BatchSim(SimConfig(scenes_dir=str(wall), sensors=()))
    room = tmp_path / "room"
    room.mkdir()
    meshes.box_room(5.0, 4.0).mesh().export(room / "room.ply")
    navmesh = build_navmesh(load_stage(room / "room.ply"))
    far = EpisodeSampler(navmesh, str(room / "room.ply"), PointNavRules(closest_dist_limit=8, max_targets=20))
    with pytest.raises(EpisodeError, match=r"room\.ply: no PointNav episode after 20 targets"):
        far.sample(np.random.default_rng(0))
    with pytest.raises(ConfigError, match="episodes_file"):
        BatchSim(SimConfig(scenes_dir=str(room), split="val"))


def test_the_stream_uses_every_mesh_of_the_folder_reproducibly(built):
    config = SimConfig(
        scenes_dir=str(built),
        num_envs=4,
        sensors=(),
        scenes_in_memory=2,
        episodes_per_scene=2,
        max_episode_steps=3,
        seed=3,
    )
    runs = []
    for _ in range(2):
        sim = BatchSim(config)
        assert [p.rsplit("/", 1)[-1] for p in sim.meshes.paths] == [
            "a_room.ply",
            "c_ramp.obj",
            "b_stairs.ply",
        ]
        sim.reset()
        seen, starts = set(), []
        for _ in range(12):
            seen.update(sim.meshes.scenes[s].path for s in sim.slot.tolist())
            starts.append(sim.start_geodesic.clone())
            sim.step(torch.ones(4, dtype=torch.long))
        assert len(sim.meshes.scenes) == 2 and len(seen) == 3  # two in memory, all three used
        distances = torch.cat(starts)
        assert bool(((distances >= 1.0 - 0.05) & (distances <= 30.0)).all())
        runs.append(distances)
        sim.close()
    assert torch.equal(runs[0], runs[1])
    other = BatchSim(SimConfig(**{**config.to_dict(), "seed": 4}))
    other.reset()
    assert not torch.equal(other.start_geodesic, runs[0][:4])


def test_resume_continues_a_mesh_stream_exactly(built):
    config = SimConfig(
        scenes_dir=str(built),
        num_envs=3,
        resolution=(16, 16),
        scenes_in_memory=2,
        episodes_per_scene=2,
        max_episode_steps=4,
        seed=1,
    )
    actions = torch.randint(0, 4, (14, 3), generator=torch.Generator().manual_seed(0))
    first = steps_after_a_resume_match(config, actions, checkpoint_after=6)
    assert any(bool(d.any()) for _, _, d, _ in first)


def test_a_tiny_ppo_run_trains_on_a_folder_of_meshes_and_resumes(exported, tmp_path):
    from navzoo.train.config import load_config
    from navzoo.train.trainer import train

    overrides = [
        f"sim.scenes_dir={exported['scenes_dir']}",
        f"sim.scene_dataset={exported['scene_dataset']}",
        "sim.num_envs=4",
        "sim.episodes_per_scene=2",
        "sim.max_episode_steps=20",
        "ppo.num_steps=8",
        "policy.hidden_size=16",
        "policy.num_recurrent_layers=1",
        "policy.rnn_type=GRU",
        "checkpoint_every=1",
        "torch_threads=1",
    ]
    threads = torch.get_num_threads()
    try:
        result = train(load_config("pointnav-blind", [*overrides, "total_frames=64"]), tmp_path / "run")
        assert result.updates == 2
        more = train(
            load_config("pointnav-blind", [*overrides, "total_frames=96"]), tmp_path / "run", resume=True
        )
        assert more.updates == 3 and math.isfinite(more.metrics.get("value_loss", 0.0))
    finally:
        torch.set_num_threads(threads)
