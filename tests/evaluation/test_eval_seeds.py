"""Evaluation does not depend on the batch size: each episode's random draws are keyed on (seed, episode,
step), so sampled policies and the random baseline give the same episodes with any number of environments."""

from dataclasses import asdict

import numpy as np
import pytest
import torch

import navzoo
from navzoo.agents.baselines import make_baseline
from navzoo.agents.draws import keyed_uniform
from navzoo.agents.policy_agent import PolicyAgent, inverse_cdf, sim_settings
from navzoo.evaluation import evaluate
from navzoo.sim import BatchSim, SimConfig

EPISODES = 7  # not a multiple of 3: the last batch of three environments runs past the last episode
STEP_LIMIT = 30
POLICY_OUTPUTS = ("values", "action_probs")

pytestmark = pytest.mark.usefixtures("one_thread")


def val_sim(num_envs: int, **settings) -> BatchSim:
    config = SimConfig(
        split="val",
        num_envs=num_envs,
        scene_families=("apartment-s",),
        max_episode_steps=STEP_LIMIT,
        **settings,
    )
    return BatchSim(config)


def evaluate_with(num_envs: int, make_agent, **settings) -> list[dict]:
    sim = val_sim(num_envs, **settings)
    try:
        return [asdict(r) for r in evaluate(sim, make_agent(sim), EPISODES, progress=False)]
    finally:
        sim.close()


def assert_same_episodes(one: list[dict], three: list[dict]) -> None:
    """Every field equal; the policy's own float outputs to float32 rounding, since matrix products may
    sum in another order for another batch size."""
    for a, b in zip(one, three, strict=True):
        message = f"episode {a['episode_index']}"
        for name in POLICY_OUTPUTS:
            x, y = a.pop(name), b.pop(name)
            if x is None or y is None:
                assert x is y, message
            else:
                np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6, err_msg=message)
        np.testing.assert_equal(a, b, err_msg=message)


def tiny_policy(kind: str):
    torch.manual_seed(0)
    if kind == "blind":
        return navzoo.create_model("pointnav-blind", hidden_size=32).eval()
    return navzoo.create_model("bps-se-resnet9", resolution=(32, 32), hidden_size=64, base_planes=16).eval()


@pytest.mark.parametrize("kind", ["blind", "depth"])
def test_sampled_policy_gives_the_same_episodes_with_one_or_three_environments(kind):
    policy = tiny_policy(kind)
    settings = sim_settings(policy.config)

    def agent(sim):
        return PolicyAgent(policy, sim.num_envs, seed=5)

    one = evaluate_with(1, agent, **settings)
    assert_same_episodes(one, evaluate_with(3, agent, **settings))
    assert len({tuple(e["actions"]) for e in one}) > 1  # the episodes did sample different actions


def test_random_baseline_gives_the_same_episodes_with_one_or_three_environments():
    def agent(sim):
        return make_baseline("random", sim, seed=2)

    one = evaluate_with(1, agent, sensors=())
    assert_same_episodes(one, evaluate_with(3, agent, sensors=()))
    assert {int(a) for e in one for a in e["actions"]} >= {1, 2, 3}


def test_keyed_draws_depend_on_seed_episode_and_step_only():
    keys = torch.tensor([[0, 0], [0, 1], [1, 0], [5, 17], [5, 17]])
    draws = keyed_uniform(3, keys)
    assert draws.dtype == torch.float64 and ((draws >= 0) & (draws < 1)).all()
    assert len(set(draws[:4].tolist())) == 4 and draws[3] == draws[4]
    assert torch.equal(keyed_uniform(3, keys[3:4]), draws[3:4])  # the batch around a key does not matter
    assert not torch.equal(keyed_uniform(4, keys), draws)


def test_inverse_cdf_sampling_follows_the_probabilities():
    probs = torch.tensor([[0.0, 0.5, 0.0, 0.5], [0.2, 0.3, 0.1, 0.4]]).repeat(20_000, 1)
    actions = inverse_cdf(probs, torch.rand(len(probs), generator=torch.Generator().manual_seed(0)))
    first, second = actions[0::2], actions[1::2]
    assert set(first.tolist()) == {1, 3}  # never an action of probability 0
    frequency = torch.bincount(second, minlength=4) / len(second)
    torch.testing.assert_close(frequency, probs[1], atol=0.01, rtol=0)
    assert inverse_cdf(probs[:2], torch.tensor([0.0, 1 - 2**-32], dtype=torch.float64)).tolist() == [1, 3]


def test_an_episode_evaluated_alone_is_the_same_episode_as_in_its_split():
    """The demo replays one episode in a one-episode simulator; its draws are keyed on the episode's
    identity, not its place in the list, so it matches `navzoo eval`'s run of that episode."""
    policy = tiny_policy("blind")
    settings = sim_settings(policy.config)
    split = evaluate_with(2, lambda sim: PolicyAgent(policy, sim.num_envs, seed=5), **settings)
    sim = val_sim(1, **settings)
    alone = BatchSim(sim.config, [sim.episodes[EPISODES - 1]])
    result = asdict(evaluate(alone, PolicyAgent(policy, 1, seed=5), 1, progress=False)[0])
    result["episode_index"] = EPISODES - 1
    assert_same_episodes([split[-1]], [result])
