"""BatchSim checkpoints: a resumed simulator continues exactly as the uninterrupted one would."""

import io
import json

import pytest
import torch

from navzoo.errors import NavzooError
from navzoo.sim import BatchSim, SimConfig, save_episodes, split_episodes

SMALL = SimConfig(
    task="pointnav",
    split="train",
    num_envs=8,
    sensors=("depth", "rgb"),
    resolution=(16, 16),
    scenes_in_memory=2,
    episodes_per_scene=3,
    scene_families=("apartment-s",),
    max_episode_steps=30,
)


def _clone(value):
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, dict):
        return {k: _clone(v) for k, v in value.items()}
    return tuple(_clone(v) for v in value)


def _assert_equal(a, b):
    """Exact equality of nested dicts, tuples and lists of tensors and plain values."""
    if isinstance(a, torch.Tensor):
        assert torch.equal(a, b)
    elif isinstance(a, dict):
        assert a.keys() == b.keys()
        for key in a:
            _assert_equal(a[key], b[key])
    elif isinstance(a, tuple | list):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _assert_equal(x, y)
    else:
        assert a == b


def _step_all(sim: BatchSim, actions: list[torch.Tensor]) -> list:
    return [_clone(sim.step(action)) for action in actions]


def _round_trip(state: dict) -> dict:
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


@pytest.mark.parametrize(
    "config",
    [
        SMALL,
        SMALL.replace(split="val"),
        SMALL.replace(task="flee"),
        SMALL.replace(task="explore"),
        SMALL.replace(sensors=("depth", "seen_map"), seen_map_size=8),
    ],
    ids=["pointnav-train", "pointnav-val", "flee-train", "explore-train", "pointnav-seen-map"],
)
def test_resumed_simulator_continues_bit_identically(config):
    generator = torch.Generator().manual_seed(0)

    def random_actions() -> torch.Tensor:
        return torch.randint(0, 4, (config.num_envs,), generator=generator)

    a = BatchSim(config)
    a.reset(seed=[100 + i for i in range(config.num_envs)])  # seeds a fresh simulator would not have
    # Save at the hardest moment for a rotating pool: after a swap, with a slot retiring and a prefetch out.
    steps = 0
    rotation = a.pool.rotation
    rotating = rotation is not None and rotation.rotating
    while steps < 20 or (rotating and rotation.retiring < 0):
        a.step(random_actions())
        steps += 1
        assert steps < 500, "the training pool never retired a slot"
    state = a.state_dict()
    saved_obs = a.observe()
    saved_scenes = [x.scene.scene_id for x in a.pool.assets]
    actions = [random_actions() for _ in range(40)]
    expected = _step_all(a, actions)
    assert any("episode" in info for *_, info in expected)
    if rotating:
        assert state["pool"]["next_scene"] > config.scenes_in_memory  # rotated before the save
        assert rotation.next_scene > state["pool"]["next_scene"]  # and after it
    # Serialised only now: a state dict sharing memory with the simulator would have moved on with it.
    state = _round_trip(state)
    for part in ("config", "pool"):
        assert json.loads(json.dumps(state[part])) == state[part]

    b = BatchSim(config)
    for _ in range(2):  # a fresh simulator, then one whose scenes and episodes have moved on
        b.load_state_dict(state)
        _assert_equal(b.state_dict(), state)
        assert [x.scene.scene_id for x in b.pool.assets] == saved_scenes
        _assert_equal(b.observe(), saved_obs)
        _assert_equal(_step_all(b, actions), expected)
    a.close()
    b.close()


def test_loading_under_another_config_names_the_mismatch():
    small = BatchSim(SMALL.replace(num_envs=4, sensors=()))
    state = BatchSim(SMALL.replace(sensors=())).state_dict()
    hint = "num_envs=8, this simulator has 4; resume with the same sim config"
    with pytest.raises(NavzooError, match=hint):
        small.load_state_dict(state)
    with pytest.raises(NavzooError, match="split='train', this simulator has 'val'"):
        BatchSim(SMALL.replace(split="val", sensors=())).load_state_dict(state)


def test_training_state_does_not_load_into_a_fixed_episode_list(tmp_path):
    path = tmp_path / "episodes.json"
    save_episodes(split_episodes("val", SMALL.scene_families, 3, 0.1, 1.0, 30.0), path)
    fixed = BatchSim(SMALL.replace(sensors=(), episodes_file=str(path)))
    state = BatchSim(SMALL.replace(sensors=())).state_dict()
    with pytest.raises(NavzooError, match="'stream' scene pool, this simulator has a 'fixed' one"):
        fixed.load_state_dict(state)
