"""The seen_map sensor (navzoo.sim.map_sensor): what it shows, that only the simulator's own steps grow it,
that the map-planner shares its map without acting any differently, and a policy that reads it through
evaluation, gymnasium and the weight format, with the errors that name what does not fit."""

import numpy as np
import pytest
import torch

import navzoo
from navzoo.agents.baselines import MapPlannerAgent, OracleAgent
from navzoo.agents.policy_agent import PolicyAgent, check_sim_config
from navzoo.errors import ConfigError, NavzooError, ObservationError
from navzoo.evaluation import evaluate, summarize
from navzoo.interop.gym_env import make_env
from navzoo.models import GOAL_SENSOR, PointNavPolicy, PolicyConfig
from navzoo.models.add_seen_map import add_seen_map
from navzoo.sim import BatchSim, SimConfig
from navzoo.sim.seen_map import egocentric_grid
from navzoo.transfer.settings import check_base
from navzoo.zoo.habitat_checkpoints import policy_to_habitat_state_dict

pytestmark = pytest.mark.usefixtures("one_thread")

MAPPED = SimConfig(
    split="val", num_envs=4, sensors=("depth", "seen_map"), resolution=(64, 64), seen_map_size=16
)
MAP_POLICY = PolicyConfig(
    backbone="simple_cnn",
    sensors=("depth", "seen_map", GOAL_SENSOR),
    resolution=(64, 64),
    hidden_size=64,
    rnn_type="GRU",
    num_recurrent_layers=1,
    seen_map_size=16,
    seen_map_cell=0.5,
)


@pytest.fixture
def sim():
    sim = BatchSim(MAPPED)
    yield sim
    sim.close()


def _walk(sim: BatchSim, steps: int) -> dict[str, torch.Tensor]:
    """Follow the oracle for `steps` steps (its episodes end on their own); the last observations."""
    oracle = OracleAgent(sim)
    obs = sim.reset(seed=0)
    for _ in range(steps):
        obs, *_ = sim.step(oracle.actions())
    return obs


def test_the_map_shows_only_true_walls_and_where_the_agent_has_been(sim):
    obs = _walk(sim, 40)
    seen = obs["seen_map"]
    assert seen.shape == (4, 16, 16, 2) and seen.dtype == torch.float32
    cell = float(sim.pool.cell_size)
    pos, heading, envs = sim.pos.numpy(), sim.heading.numpy(), np.arange(4)
    truth = np.stack([sim.pool.atlas.heights[int(s)].numpy() > 0 for s in sim.slot])
    walls = egocentric_grid(truth, envs, pos, heading, 16, 0.5, cell, True)
    assert not (seen[..., 0].numpy() > walls).any()  # every wall it shows is one
    assert seen[..., 0].sum() > walls.sum() / 4  # and it has seen a good part of them
    # The agent stands where the four middle squares meet, in a cell it has visited.
    assert seen[:, 7:9, 7:9, 1].flatten(1).any(1).all()
    assert (seen[..., 1].flatten(1).sum(1) > 1).all()  # and it has walked from somewhere


def test_rendering_at_a_pose_set_by_hand_adds_nothing_to_the_map(sim):
    _walk(sim, 10)
    before = {k: v.clone() for k, v in sim.seen_map.state_dict().items()}
    shown = sim.observe()["seen_map"]
    sim.pos[0] += 1.0
    sim.heading[0] += 1.0
    sim.observe(torch.tensor([0]))
    sim.pos[0] -= 1.0
    sim.heading[0] -= 1.0
    for key, value in sim.seen_map.state_dict().items():
        assert torch.equal(value, before[key]), key
    assert torch.equal(sim.observe()["seen_map"], shown)


def test_the_map_starts_afresh_with_each_episode(sim):
    sim.reset(seed=0)
    sim.seen_map.visited[:] = True
    obs = sim.reset(seed=0, envs=torch.tensor([1]))
    visited = obs["seen_map"][..., 1].flatten(1).sum(1)
    assert visited[0] > 100  # env 0 kept its map, every cell of the scene visited
    assert 1 <= visited[1] <= 4  # env 1 began again where it stands: one 0.25 m cell


def test_the_map_planner_acts_the_same_when_it_shares_the_sensor_s_map():
    trails = []
    for sensors in (("depth",), ("depth", "seen_map")):
        sim = BatchSim(MAPPED.replace(sensors=sensors))
        planner = MapPlannerAgent(sim)
        obs, first = sim.reset(seed=0), torch.ones(4, dtype=torch.bool)
        trail = []
        for _ in range(150):
            obs, _, first, _ = sim.step(planner.act(obs, first))
            trail.append(sim.pos.clone())
        trails.append(torch.stack(trail))
    assert torch.equal(*trails)


def test_a_policy_reading_the_map_is_evaluated_on_the_sensor_it_names():
    policy = PointNavPolicy(MAP_POLICY).eval()
    sim = BatchSim(MAPPED)
    check_sim_config(policy.config, sim.config)
    results = evaluate(sim, PolicyAgent(policy, sim.num_envs), num_episodes=4, progress=False)
    assert summarize(results)["episodes"] == 4
    with pytest.raises(ConfigError, match=r"seen_map_size=32.*16: the model reads a seen_map of that"):
        check_sim_config(policy.config, MAPPED.replace(seen_map_size=32))
    with pytest.raises(ConfigError, match="sensors including seen_map"):
        check_sim_config(policy.config, MAPPED.replace(sensors=("depth",)))
    with pytest.raises(ObservationError, match="observation 'seen_map' is missing"):
        obs = {k: v for k, v in sim.observe().items() if k != "seen_map"}
        policy.act(obs, policy.initial_state(4), torch.zeros(4, dtype=torch.long), torch.zeros(4, dtype=bool))


def test_the_map_policy_saves_loads_and_says_what_it_reads(tmp_path):
    policy = PointNavPolicy(MAP_POLICY)
    policy.save_pretrained(tmp_path / "mapped")
    loaded = navzoo.load(str(tmp_path / "mapped"))
    assert loaded.config == MAP_POLICY
    assert "seen_map (16x16 squares of 0.5 m)" in (tmp_path / "mapped" / "README.md").read_text()
    with pytest.raises(NavzooError, match="reads the seen_map sensor"):
        policy_to_habitat_state_dict(PointNavPolicy(MAP_POLICY.replace(backbone="resnet18")))
    with pytest.raises(ConfigError, match="transfer settings do not carry over"):
        check_base(policy, "mapped")


def test_a_policy_without_the_map_grows_into_one_that_acts_the_same():
    """add_seen_map: zero columns where the map enters the recurrent core, so the grown policy gives the
    source's action distribution and value on real observations, whatever the map shows."""
    source = PointNavPolicy(MAP_POLICY.without_seen_map()).eval()
    grown = PointNavPolicy(MAP_POLICY).eval()
    fresh_encoder = {k: v.clone() for k, v in grown.state_dict().items() if "map_encoder" in k}
    grown.load_state_dict(add_seen_map(source, grown))
    assert all(torch.equal(grown.state_dict()[k], v) for k, v in fresh_encoder.items())
    obs = _walk(BatchSim(MAPPED), 30)
    assert obs["seen_map"].any()
    hidden, prev, masks = source.initial_state(4), torch.ones(4, dtype=torch.long), torch.ones(4, dtype=bool)
    with torch.no_grad():
        before, after = source(obs, hidden, prev, masks), grown(obs, hidden, prev, masks)
    torch.testing.assert_close(after.distribution.logits, before.distribution.logits, atol=1e-5, rtol=0)
    torch.testing.assert_close(after.value, before.value, atol=1e-5, rtol=0)
    torch.testing.assert_close(after.hidden, before.hidden, atol=1e-5, rtol=0)
    with pytest.raises(NavzooError, match="must differ by the map's embedding alone"):
        add_seen_map(PointNavPolicy(MAP_POLICY.without_seen_map().replace(hidden_size=32)), grown)


def test_gymnasium_declares_the_map_in_its_observation_space():
    env = make_env(MAPPED.replace(num_envs=1))
    obs, _ = env.reset(seed=0)
    assert env.observation_space["seen_map"].shape == (16, 16, 2)
    assert env.observation_space.contains(obs)
    obs, *_ = env.step(1)
    assert env.observation_space.contains(obs)
    env.close()


def test_configs_name_what_the_map_needs():
    with pytest.raises(ConfigError, match="'depth' too: seen_map maps what depth shows"):
        SimConfig(sensors=("seen_map",))
    with pytest.raises(ConfigError, match="seen_map_size"):
        SimConfig(sensors=("depth", "seen_map"), seen_map_size=0)
    with pytest.raises(ConfigError, match=r"seen_map_size.*multiple of 8"):
        MAP_POLICY.replace(seen_map_size=12)
    with pytest.raises(ConfigError, match=r"seen_map_size.*None unless seen_map is among the sensors"):
        MAP_POLICY.replace(sensors=("depth", GOAL_SENSOR))
    with pytest.raises(ConfigError, match="depth as well"):
        MAP_POLICY.replace(sensors=("rgb", "seen_map", GOAL_SENSOR))
    with pytest.raises(ConfigError, match=r"seen_map_size.*multiple of 8 .* up to 256"):
        MAP_POLICY.replace(seen_map_size=264)
    with pytest.raises(ConfigError, match="no seen_map for a blind policy"):
        MAP_POLICY.replace(backbone=None, sensors=("seen_map", GOAL_SENSOR))
