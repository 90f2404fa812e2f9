"""habitat's per-scene episode files: a split whose top file lists no episodes and whose `content/` folder
holds a file per scene (habitat's train splits) is read whole, as habitat-lab's PointNavDatasetV1 reads it."""

import gzip
import json

import pytest

from navzoo.errors import EpisodeError
from navzoo.sim import BatchSim, SimConfig, load_episodes, save_episodes
from navzoo.sim.episodes import episodes_for

CONFIG = SimConfig(split="val", num_envs=2, sensors=(), scene_families=("apartment-s",), episodes_per_scene=2)


@pytest.fixture(scope="module")
def episodes():
    return episodes_for(CONFIG)[:6]


@pytest.fixture
def split(tmp_path, episodes):
    """train/train.json.gz with no episodes, and content/<scene>.json.gz per scene, written out of order."""
    folder = tmp_path / "train"
    (folder / "content").mkdir(parents=True)
    (folder / "train.json.gz").write_bytes(gzip.compress(b'{"episodes": []}'))
    scenes = sorted({e.scene_id for e in episodes})
    for name, scene in reversed(list(zip(("a_scene", "b_scene", "c_scene"), scenes, strict=False))):
        save_episodes([e for e in episodes if e.scene_id == scene], folder / "content" / f"{name}.json.gz")
    return folder / "train.json.gz"


def test_the_content_files_are_read_in_scene_name_order(split, episodes):
    scenes = sorted({e.scene_id for e in episodes})
    expected = [e for scene in scenes for e in episodes if e.scene_id == scene]
    loaded = load_episodes(split)
    assert [(e.scene_id, e.episode_id) for e in loaded] == [(e.scene_id, e.episode_id) for e in expected]
    sim = BatchSim(CONFIG.replace(episodes_file=str(split)))
    assert [e.episode_id for e in sim.episodes] == [e.episode_id for e in expected]
    sim.close()


def test_the_top_file_s_own_episodes_come_first(split, episodes):
    save_episodes(episodes[-1:], split)
    loaded = load_episodes(split)
    assert (loaded[0].scene_id, loaded[0].episode_id) == (episodes[-1].scene_id, episodes[-1].episode_id)
    assert len(loaded) == len(episodes) + 1


def test_a_damaged_content_file_is_named(split):
    bad = split.parent / "content" / "b_scene.json.gz"
    bad.write_bytes(bad.read_bytes()[:40])
    with pytest.raises(EpisodeError, match=r"b_scene\.json\.gz cannot be read"):
        load_episodes(split)


def test_no_episodes_anywhere_names_both_places(split):
    for file in (split.parent / "content").iterdir():
        file.write_bytes(gzip.compress(json.dumps({"episodes": []}).encode()))
    with pytest.raises(EpisodeError, match=r"holds no episodes or in .*content"):
        load_episodes(split)


def test_scenes_are_ordered_by_name_as_habitat_lists_them(tmp_path, episodes):
    """habitat sorts scene names, not file names: "a" before "a-b", though "a-b.json.gz" < "a.json.gz"."""
    folder = tmp_path / "train"
    (folder / "content").mkdir(parents=True)
    (folder / "train.json.gz").write_bytes(gzip.compress(b'{"episodes": []}'))
    save_episodes(episodes[:1], folder / "content" / "a-b.json.gz")
    save_episodes(episodes[1:2], folder / "content" / "a.json.gz")
    loaded = load_episodes(folder / "train.json.gz")
    assert [e.episode_id for e in loaded] == [episodes[1].episode_id, episodes[0].episode_id]
