"""The self-supervised auxiliary tasks of PPO (navzoo.train.auxiliary): which steps they may use, their
losses on hand-built cases, and an update that trains them beside the policy."""

import math

import pytest
import torch

import navzoo
from navzoo.errors import ConfigError
from navzoo.train.auxiliary import ActionConditionalCPC, InverseDynamics, predicted_steps
from navzoo.train.config import PPOConfig, load_config
from navzoo.train.ppo import PPO
from tests.train.test_ppo import collect, max_change, snapshot

pytestmark = pytest.mark.usefixtures("one_thread")

CPU = torch.device("cpu")


def test_predicted_steps_stop_at_episode_starts_and_the_rollout_end():
    # Five steps of one environment; an episode starts at step 3.
    masks = torch.tensor([[True], [True], [True], [False], [True]])
    future, valid = predicted_steps(torch.tensor([0, 2, 3]), torch.tensor([0, 0, 0]), masks, steps=3)
    assert future.T.tolist() == [[1, 2, 3], [3, 4, 4], [4, 4, 4]]
    # From step 0: steps 1 and 2 count, 3 begins another episode. From step 2: step 3 does not. From step
    # 3 (the new episode's start): step 4 counts, then the rollout ends.
    assert valid.T.tolist() == [[True, True, False], [False, False, False], [True, False, False]]


def test_inverse_dynamics_loss_counts_only_steps_within_an_episode():
    task = InverseDynamics(hidden_size=2, embedding_size=2, num_actions=4)
    with torch.no_grad():
        task.decoder.weight.zero_()
        task.decoder.bias.copy_(torch.tensor([0.0, math.log(3), 0.0, 0.0]))  # p(action 1) = 1/2
    beliefs, embeddings = torch.zeros(3, 1, 2), torch.zeros(3, 1, 2)
    actions = torch.tensor([[1], [0], [2]])
    masks = torch.tensor([[True], [True], [False]])  # step 2 starts an episode: only a_0 counts
    assert task(beliefs, embeddings, actions, masks).item() == pytest.approx(math.log(2))
    everything = torch.ones(3, 1, dtype=torch.bool)  # a_0 (p 1/2) and a_1 (p 1/6)
    both = (math.log(2) + math.log(6)) / 2
    assert task(beliefs, embeddings, actions, everything).item() == pytest.approx(both)


def test_cpca_learns_to_tell_the_real_future_from_a_random_one():
    torch.manual_seed(0)
    length, n, size = 12, 8, 6
    task = ActionConditionalCPC(size, size, num_actions=4, steps=4, subsample=1.0)
    actions = torch.randint(0, 4, (length, n))
    # Each action moves the embedding by its own code, and the belief is the current embedding: the
    # future embeddings follow from the belief and the actions taken.
    codes = torch.randn(4, size)
    embeddings = torch.cat([torch.randn(1, n, size), codes[actions[:-1]] / 2]).cumsum(0)
    beliefs = embeddings.clone()
    masks = torch.ones(length, n, dtype=torch.bool)
    optimizer = torch.optim.Adam(task.parameters(), 1e-2)
    first = task(beliefs, embeddings, actions, masks).item()
    for _ in range(150):
        loss = task(beliefs, embeddings, actions, masks)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert first == pytest.approx(2 * math.log(2), abs=0.2)  # chance for both terms
    assert loss.item() < first / 2


def tiny_seeing_policy(seed: int = 0):
    torch.manual_seed(seed)
    return navzoo.create_model("pointnav-simple-cnn", hidden_size=16, resolution=(40, 40))


def test_ppo_update_trains_the_auxiliary_heads_and_the_policy_through_them():
    policy = tiny_seeing_policy()
    config = PPOConfig(ppo_epoch=1, num_mini_batch=2, aux_tasks=("cpca", "inverse_dynamics"), cpca_steps=4)
    ppo = PPO(policy, config, lr=1e-3, device=CPU, distributed=False)
    before = snapshot(policy)
    stats = ppo.update(collect(policy))
    assert {"aux_cpca", "aux_inverse_dynamics"} <= set(stats)
    assert all(math.isfinite(stats[k]) for k in ("aux_cpca", "aux_inverse_dynamics"))
    assert max_change(policy, before) > 0
    assert not any("tasks" in name for name in policy.state_dict())  # the heads are not exported
    again = PPO(tiny_seeing_policy(), config, lr=1e-3, device=CPU, distributed=False)
    again.load_state_dict(ppo.state_dict())
    for mine, theirs in zip(again.trainable.head.parameters(), ppo.trainable.head.parameters(), strict=True):
        assert torch.equal(mine, theirs)


def test_auxiliary_tasks_config_errors():
    with pytest.raises(ConfigError, match=r"ppo\.aux_tasks"):
        load_config("pointnav-depth-se-resnet9", ["ppo.aux_tasks=[forward_dynamics]"])
    with pytest.raises(ConfigError, match="blind"):
        load_config("pointnav-blind", ["ppo.aux_tasks=[cpca]"])
    with pytest.raises(ConfigError, match="dagger"):
        load_config("navzoo-pointnav-depth-il", ["ppo.aux_tasks=[cpca]"])
    config = load_config("pointnav-depth-se-resnet9", ["ppo.aux_tasks=[cpca, inverse_dynamics]"])
    assert config.ppo.aux_tasks == ("cpca", "inverse_dynamics")
