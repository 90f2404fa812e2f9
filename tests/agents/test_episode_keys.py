"""Sampled actions are keyed on an episode's identity (navzoo.agents.draws): a scanned scene's episode keys
the same wherever its scenes folder lies, and differently from another scene's episode of the same id."""

import gzip
import json

from navzoo.agents.draws import episode_key
from navzoo.sim import load_episodes


def write_file(path, scene_ids):
    episodes = [
        {
            "episode_id": "0",
            "scene_id": scene_id,
            "start_position": [1.0, 0.0, 1.0],
            "start_rotation": [0.0, 0.0, 0.0, 1.0],
            "goals": [{"position": [2.0, 0.0, 2.0]}],
        }
        for scene_id in scene_ids
    ]
    path.write_bytes(gzip.compress(json.dumps({"episodes": episodes}).encode()))
    return path


def test_a_mesh_episode_keys_the_same_wherever_its_scenes_folder_lies(tmp_path):
    scenes = ["gibson/Adrian.glb", "data/scene_datasets/gibson/Adrian.glb", "gibson/Cantwell.glb"]
    path = write_file(tmp_path / "val.json.gz", scenes)
    here = load_episodes(path, scenes_dir="/data/here/scene_datasets")
    there = load_episodes(path, scenes_dir="/elsewhere/scene_datasets")
    assert here[0].scene_id != there[0].scene_id
    keys_here, keys_there = [episode_key(e) for e in here], [episode_key(e) for e in there]
    assert keys_here == keys_there
    assert keys_here[0] == keys_here[1]  # habitat's data/scene_datasets/ prefix names the same scene
    assert keys_here[0] != keys_here[2]
