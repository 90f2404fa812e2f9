"""PPO maths and machinery: GAE, the PPO losses, V-trace, recurrent masking, rollout storage and updates.

The maths is checked on cases small enough to compute by hand (the numbers are written out below); the
update is checked on a tiny blind policy (LSTM 16) so the whole file runs in a few seconds on a CPU.
"""

import copy
import dataclasses
import math

import pytest
import torch

import navzoo
from navzoo.models import GOAL_SENSOR
from navzoo.train import ppo as ppo_module
from navzoo.train.config import PPOConfig
from navzoo.train.ppo import PPO, actor_lr_factor, ppo_losses, vtrace
from navzoo.train.rollout import RolloutStorage

pytestmark = pytest.mark.usefixtures("one_thread")

CPU = torch.device("cpu")


def tiny_policy(rnn_type: str = "LSTM", seed: int = 0):
    torch.manual_seed(seed)
    return navzoo.create_model("pointnav-blind", hidden_size=16, num_recurrent_layers=1, rnn_type=rnn_type)


def t(*rows) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.float32)


def fill(storage: RolloutStorage, rewards, values, dones) -> None:
    """Insert steps with the given rewards / values / dones ([T, N] nested lists); actions are zeros."""
    n = storage.num_envs
    for r, v, d in zip(rewards, values, dones, strict=True):
        storage.insert(
            torch.zeros(n, dtype=torch.long),
            torch.zeros(n),
            t(*v),
            t(*r),
            {GOAL_SENSOR: torch.zeros(n, 2)},
            torch.tensor(d),
        )


def empty_storage(num_steps: int, n: int) -> RolloutStorage:
    return RolloutStorage(num_steps, {GOAL_SENSOR: torch.zeros(n, 2)}, torch.zeros(n, 2, 16))


# --- GAE -----------------------------------------------------------------------------------------------


def test_gae_hand_computed_with_an_episode_end():
    # gamma = tau = 0.5, so gamma * tau = 0.25. Two environments, T = 3.
    storage = empty_storage(3, 2)
    fill(
        storage,
        rewards=[[1, 1], [2, 0], [3, 4]],
        values=[[1, 2], [1, 1], [1, 1]],
        # env 1's episode ends at step 1: masks[2] is False, so step 1 does not bootstrap from step 2
        dones=[[False, False], [False, True], [False, False]],
    )
    storage.compute_returns(bootstrap=t(2, 4), gamma=0.5, tau=0.5)
    # env 0, no episode end:
    #   delta_2 = 3 + 0.5*2 - 1 = 3      A_2 = 3
    #   delta_1 = 2 + 0.5*1 - 1 = 1.5    A_1 = 1.5 + 0.25*3    = 2.25
    #   delta_0 = 1 + 0.5*1 - 1 = 0.5    A_0 = 0.5 + 0.25*2.25 = 1.0625
    # env 1, episode ends after step 1:
    #   delta_2 = 4 + 0.5*4 - 1 = 5      A_2 = 5
    #   delta_1 = 0 + 0     - 1 = -1     A_1 = -1 (would be -1 + 0.25*5 = 0.25 if A_2 leaked across the end)
    #   delta_0 = 1 + 0.5*1 - 2 = -0.5   A_0 = -0.5 + 0.25*(-1) = -0.75
    expected_adv = t([1.0625, -0.75], [2.25, -1.0], [3.0, 5.0])
    torch.testing.assert_close(storage.advantages, expected_adv)
    # returns = advantages + values
    torch.testing.assert_close(storage.returns, t([2.0625, 1.25], [3.25, 0.0], [4.0, 6.0]))
    torch.testing.assert_close(storage.values[3], t(2, 4))  # the bootstrap is stored after the last step


def test_gae_on_a_preempted_rollout():
    # Room for 4 steps, but the rollout stopped after 2 (preemption): length 2 < num_steps.
    storage = empty_storage(4, 1)
    fill(storage, rewards=[[1], [2]], values=[[1], [1]], dones=[[False], [False]])
    assert storage.length == 2
    storage.compute_returns(bootstrap=t(2), gamma=0.5, tau=0.5)
    # delta_1 = 2 + 0.5*2 - 1 = 2     A_1 = 2          (bootstraps from values[2] = 2, not from values[4])
    # delta_0 = 1 + 0.5*1 - 1 = 0.5   A_0 = 0.5 + 0.25*2 = 1
    torch.testing.assert_close(storage.advantages[:2], t([1.0], [2.0]))
    torch.testing.assert_close(storage.returns[:2], t([2.0], [3.0]))
    assert storage.values[2].item() == 2.0
    assert not storage.advantages[2:].any()  # the unused steps stay untouched
    (batch,) = storage.minibatches(1)
    assert batch.rewards.shape == (2, 1)  # mini-batches hold only the collected steps
    assert batch.bootstrap.item() == 2.0


# --- PPO losses ------------------------------------------------------------------------------------------

CFG = PPOConfig(clip_param=0.2, value_loss_coef=0.5, entropy_coef=0.01)


def losses_for(ratio, advantage, value=0.0, old_value=0.0, ret=0.0, entropy=0.0, config=CFG):
    return ppo_losses(
        log_probs=t(math.log(ratio)),
        old_log_probs=t(0.0),
        advantages=t(advantage),
        values=t(value),
        old_values=t(old_value),
        returns=t(ret),
        entropy=t(entropy),
        config=config,
    )


@pytest.mark.parametrize(
    ("ratio", "advantage", "surrogate"),
    [
        (1.1, 2.0, 2.2),  # inside [0.8, 1.2]: min(1.1*2, 1.1*2) = 2.2
        (1.5, 2.0, 2.4),  # above, A > 0: min(1.5*2, 1.2*2) = 2.4, the gain is clipped
        (1.5, -2.0, -3.0),  # above, A < 0: min(-3.0, -2.4) = -3.0, the pessimistic unclipped term
        (0.5, -2.0, -1.6),  # below, A < 0: min(-1.0, 0.8*-2) = -1.6, clipped
        (0.5, 2.0, 1.0),  # below, A > 0: min(1.0, 1.6) = 1.0, unclipped
        (0.9, -1.0, -0.9),  # inside, A < 0: -0.9
    ],
)
def test_action_loss_clipping(ratio, advantage, surrogate):
    losses = losses_for(ratio, advantage)
    assert losses.action.item() == pytest.approx(-surrogate, rel=1e-5)  # a loss: minus the surrogate
    assert losses.clip_fraction.item() == float(abs(ratio - 1) > 0.2)
    assert losses.approx_kl.item() == pytest.approx(-math.log(ratio), rel=1e-5)


@pytest.mark.parametrize(
    ("value", "clipped", "unclipped"),
    [
        # old value 0, return 1, clip 0.2. value 0.5: unclipped 0.5*(0.5-1)^2 = 0.125; the clipped value
        # 0 + 0.2 gives 0.5*(0.2-1)^2 = 0.32, and the max of the two is taken.
        (0.5, 0.32, 0.125),
        # value 0.1 is within 0.2 of the old value: both 0.5*(0.1-1)^2 = 0.405
        (0.1, 0.405, 0.405),
        # value 2: unclipped 0.5*(2-1)^2 = 0.5 > clipped 0.5*(0.2-1)^2 = 0.32, so the max keeps 0.5
        (2.0, 0.5, 0.5),
    ],
)
def test_value_loss_clipped_and_unclipped(value, clipped, unclipped):
    with_clip = losses_for(1.0, 0.0, value=value, old_value=0.0, ret=1.0, config=CFG)
    no_clip = losses_for(
        1.0, 0.0, value=value, old_value=0.0, ret=1.0, config=PPOConfig(use_clipped_value_loss=False)
    )
    assert with_clip.value.item() == pytest.approx(clipped, rel=1e-5)
    assert no_clip.value.item() == pytest.approx(unclipped, rel=1e-5)


def test_total_loss_and_entropy_sign():
    config = PPOConfig(clip_param=0.2, value_loss_coef=0.5, entropy_coef=0.1, use_clipped_value_loss=False)
    entropy = torch.tensor([1.2], requires_grad=True)
    losses = ppo_losses(t(0.0), t(0.0), t(2.0), t(0.0), t(0.0), t(1.0), entropy, config)
    # action -1*2 = -2; value 0.5*(0-1)^2 = 0.5; entropy 1.2
    # total = 0.5*0.5 + (-2) - 0.1*1.2 = -1.87
    assert losses.action.item() == pytest.approx(-2.0)
    assert losses.value.item() == pytest.approx(0.5)
    assert losses.entropy.item() == pytest.approx(1.2)
    assert losses.total.item() == pytest.approx(-1.87, rel=1e-5)
    # the entropy is a bonus: more entropy lowers the loss, d total / d entropy = -entropy_coef
    losses.total.backward()
    assert entropy.grad.item() == pytest.approx(-0.1)


def test_losses_are_means_over_all_elements():
    # two elements: ratio 1.5 with A = 2 (clipped to 2.4) and ratio 0.5 with A = 2 (1.0): mean 1.7
    zeros = t(0.0, 0.0)
    losses = ppo_losses(
        log_probs=t(math.log(1.5), math.log(0.5)),
        old_log_probs=zeros,
        advantages=t(2.0, 2.0),
        values=zeros,
        old_values=zeros,
        returns=zeros,
        entropy=t(1.0, 3.0),
        config=CFG,
    )
    assert losses.action.item() == pytest.approx(-1.7, rel=1e-5)
    assert losses.entropy.item() == pytest.approx(2.0)
    assert losses.clip_fraction.item() == 1.0


# --- V-trace -----------------------------------------------------------------------------------------------


def test_vtrace_on_policy_equals_gae_returns():
    gamma, lam, steps, n = 0.9, 0.8, 5, 3
    g = torch.Generator().manual_seed(0)
    rewards = torch.randn(steps, n, generator=g)
    values = torch.randn(steps, n, generator=g)
    bootstrap = torch.randn(n, generator=g)
    dones = torch.rand(steps, n, generator=g) < 0.3
    dones[1, 0] = True  # at least one episode end
    storage = empty_storage(steps, n)
    fill(storage, rewards.tolist(), values.tolist(), dones.tolist())
    storage.compute_returns(bootstrap, gamma, lam)
    log_probs = torch.randn(steps, n, generator=g)
    discounts = gamma * storage.masks[1:].float()  # gamma where the episode goes on, 0 where it ended
    targets, advantages = vtrace(log_probs, log_probs, rewards, values, bootstrap, discounts, lam=lam)
    torch.testing.assert_close(targets, storage.returns)
    # the advantages are one-step: r_t + gamma v_{t+1} - V(x_t), with v_T the bootstrap
    next_targets = torch.cat([targets[1:], bootstrap[None]])
    torch.testing.assert_close(advantages, rewards + discounts * next_targets - values)
    # with lambda = 1 these are exactly GAE(gamma, 1) advantages
    storage.compute_returns(bootstrap, gamma, 1.0)
    _, advantages = vtrace(log_probs, log_probs, rewards, values, bootstrap, discounts, lam=1.0)
    torch.testing.assert_close(advantages, storage.advantages)


# T = 2, one environment, discount 0.5, values (1, 2), bootstrap 3, rewards (1, 1); behaviour log-probs 0,
# target ratios (2, 0.5), so next values are (2, 3) and the raw TD errors are
#   t=0: 1 + 0.5*2 - 1 = 1      t=1: 1 + 0.5*3 - 2 = 0.5
@pytest.mark.parametrize(
    ("clip_rho", "clip_c", "lam", "targets", "advantages"),
    [
        # rho = (min(1, 2), 0.5) = (1, 0.5), c = (1, 0.5)
        #   t=1: correction 0.5*0.5 = 0.25                 v_1 = 2 + 0.25 = 2.25
        #   t=0: correction 1*1 + 0.5*c_0*0.25 = 1.125     v_0 = 1 + 1.125 = 2.125
        #   (unclipped rho_0 = c_0 = 2 would give v_0 = 1 + 2 + 0.5*2*0.25 = 3.25)
        # advantages: t=0: 1 + 0.5*v_1 - 1 = 1.125; t=1: 1 + 0.5*3 - 2 = 0.5
        (1.0, 1.0, 1.0, (2.125, 2.25), (1.125, 0.5)),
        # rho_0 = min(1.5, 2) = 1.5, c_0 = 1: v_0 = 1 + 1.5*1 + 0.5*1*0.25 = 2.625
        (1.5, 1.0, 1.0, (2.625, 2.25), (1.125, 0.5)),
        # lambda 0.5 scales c: c_0 = 0.5*1: v_0 = 1 + 1 + 0.5*0.5*0.25 = 2.0625
        (1.0, 1.0, 0.5, (2.0625, 2.25), (1.125, 0.5)),
    ],
)
def test_vtrace_off_policy_hand_computed(clip_rho, clip_c, lam, targets, advantages):
    got_targets, got_advantages = vtrace(
        behaviour_log_probs=t([0.0], [0.0]),
        target_log_probs=t([math.log(2.0)], [math.log(0.5)]),
        rewards=t([1.0], [1.0]),
        values=t([1.0], [2.0]),
        bootstrap=t(3.0),
        discounts=t([0.5], [0.5]),
        clip_rho=clip_rho,
        clip_c=clip_c,
        lam=lam,
    )
    torch.testing.assert_close(got_targets, t(*targets)[:, None])
    torch.testing.assert_close(got_advantages, t(*advantages)[:, None])


def test_vtrace_stops_at_episode_ends():
    # Same case, but the episode ends after step 0 (discount 0): nothing flows back from step 1.
    targets, advantages = vtrace(
        t([0.0], [0.0]),
        t([math.log(2.0)], [math.log(0.5)]),
        t([1.0], [1.0]),
        t([1.0], [2.0]),
        t(3.0),
        discounts=t([0.0], [0.5]),
    )
    # t=1 as before: v_1 = 2.25.  t=0: v_0 = 1 + rho_0*(1 + 0 - 1) + 0 = 1; advantage 1 + 0 - 1 = 0
    torch.testing.assert_close(targets, t([1.0], [2.25]))
    torch.testing.assert_close(advantages, t([0.0], [0.5]))


# --- recurrent masking ---------------------------------------------------------------------------------


def sequence(steps: int, n: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    observations = {GOAL_SENSOR: torch.rand(steps, n, 2, generator=g) * 3}
    prev_actions = torch.randint(0, 4, (steps, n), generator=g)
    actions = torch.randint(0, 4, (steps, n), generator=g)
    masks = torch.ones(steps, n, dtype=torch.bool)
    masks[2, 0] = False  # env 0 starts a new episode at t=2
    masks[3, 1] = False  # env 1 at t=3
    return observations, prev_actions, actions, masks


@pytest.mark.parametrize("rnn_type", ["LSTM", "GRU"])
def test_evaluate_actions_matches_stepping_with_resets(rnn_type):
    policy = tiny_policy(rnn_type)
    steps, n = 5, 2
    observations, prev_actions, actions, masks = sequence(steps, n)
    hidden0 = torch.randn(n, *policy.hidden_state_shape, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        result = policy.evaluate_actions(observations, hidden0, prev_actions, masks, actions)
        hidden, values, log_probs = hidden0, [], []
        for step in range(steps):
            # reset by hand where an episode starts: a fresh state (and the mask makes it the start token)
            hidden = torch.where(masks[step].view(n, 1, 1), hidden, policy.initial_state(n))
            out = policy(
                {k: v[step] for k, v in observations.items()}, hidden, prev_actions[step], masks[step]
            )
            values.append(out.value)
            log_probs.append(out.distribution.log_prob(actions[step]))
            hidden = out.hidden
    torch.testing.assert_close(result.value, torch.stack(values))
    torch.testing.assert_close(result.log_prob, torch.stack(log_probs))
    torch.testing.assert_close(result.hidden, hidden)
    assert result.value.shape == result.entropy.shape == (steps, n)


@pytest.mark.parametrize("rnn_type", ["LSTM", "GRU"])
def test_output_after_a_reset_ignores_the_earlier_state(rnn_type):
    policy = tiny_policy(rnn_type)
    steps, n = 5, 2
    observations, prev_actions, actions, masks = sequence(steps, n)
    g = torch.Generator().manual_seed(2)
    hidden_a = torch.randn(n, *policy.hidden_state_shape, generator=g)
    hidden_b = hidden_a + torch.randn(n, *policy.hidden_state_shape, generator=g)  # perturbed
    with torch.no_grad():
        a = policy.evaluate_actions(observations, hidden_a, prev_actions, masks, actions)
        b = policy.evaluate_actions(observations, hidden_b, prev_actions, masks, actions)
    # env 0 resets at t=2, env 1 at t=3: from there on the outputs agree ...
    torch.testing.assert_close(a.value[2:, 0], b.value[2:, 0])
    torch.testing.assert_close(a.log_prob[2:, 0], b.log_prob[2:, 0])
    torch.testing.assert_close(a.value[3:, 1], b.value[3:, 1])
    torch.testing.assert_close(a.hidden, b.hidden)
    # ... while before the reset they do depend on the state
    assert not torch.allclose(a.value[:2, 0], b.value[:2, 0])
    assert not torch.allclose(a.value[:3, 1], b.value[:3, 1])


# --- rollout storage -----------------------------------------------------------------------------------


def labelled_storage(num_steps: int, n: int, length: int | None = None) -> RolloutStorage:
    """A rollout whose entries name their environment e and step s: reward 10*e + s, and so on."""
    length = num_steps if length is None else length
    env = torch.arange(n, dtype=torch.float32)
    hidden = env.view(n, 1, 1).expand(n, 2, 16).clone()
    storage = RolloutStorage(num_steps, {GOAL_SENSOR: torch.stack([env, -env], 1)}, hidden)
    for s in range(length):
        storage.insert(
            actions=torch.full((n,), s % 4),
            log_probs=-(10 * env + s),
            values=10 * env + s + 0.5,
            rewards=10 * env + s,
            next_observations={GOAL_SENSOR: torch.stack([env + 100 * (s + 1), -env], 1)},
            dones=(env + s) % 3 == 0,
        )
    return storage


def test_after_update_carries_the_last_step_to_index_0():
    for length in (4, 2):  # a full rollout and a preempted one
        storage = labelled_storage(4, 3, length)
        last_obs = storage.observations[GOAL_SENSOR][length].clone()
        last_prev_action = storage.prev_actions[length].clone()
        last_mask = storage.masks[length].clone()
        new_hidden = torch.randn(3, 2, 16)
        storage.after_update(new_hidden)
        assert storage.length == 0
        torch.testing.assert_close(storage.observations[GOAL_SENSOR][0], last_obs)
        torch.testing.assert_close(storage.prev_actions[0], last_prev_action)
        assert torch.equal(storage.masks[0], last_mask)
        torch.testing.assert_close(storage.hidden, new_hidden)
        assert new_hidden.data_ptr() != storage.hidden.data_ptr()  # copied, not aliased
        obs, prev, masks = storage.current()
        torch.testing.assert_close(obs[GOAL_SENSOR], last_obs)
        torch.testing.assert_close(prev, last_prev_action)
        assert torch.equal(masks, last_mask)


def test_insert_places_step_data():
    storage = labelled_storage(3, 2)
    # reward of env 1 at step 2 is 10*1 + 2; the action of step 1 becomes the previous action at 2
    assert storage.rewards[2, 1].item() == 12.0
    assert torch.equal(storage.prev_actions[2], storage.actions[1])
    # dones (e + s) % 3 == 0 at step s become masks[s + 1] = False
    assert storage.masks[1].tolist() == [False, True]  # s=0: env 0 done
    assert storage.masks[3].tolist() == [True, False]  # s=2: env 1 done (1+2 = 3)


@pytest.mark.parametrize(("n", "num_mini_batch"), [(6, 3), (6, 2), (5, 2), (4, 1)])
def test_minibatches_keep_whole_sequences_and_cover_every_env_once(n, num_mini_batch):
    steps = 4
    storage = labelled_storage(steps, n)
    storage.compute_returns(torch.zeros(n), 0.9, 0.9)
    for _epoch in range(2):
        seen = []
        batches = list(storage.minibatches(num_mini_batch))
        assert len(batches) == num_mini_batch
        for batch in batches:
            envs = batch.rewards[0].long() // 10  # reward 10*e + s names the environment
            seen += envs.tolist()
            step = torch.arange(steps, dtype=torch.float32)[:, None]
            # every column is one environment's whole sequence, in order, in every field
            torch.testing.assert_close(batch.rewards, 10 * envs + step)
            torch.testing.assert_close(batch.log_probs, -(10 * envs + step))
            torch.testing.assert_close(batch.values, 10 * envs + step + 0.5)
            torch.testing.assert_close(batch.returns, storage.returns[:, envs])
            torch.testing.assert_close(batch.advantages, storage.advantages[:, envs])
            torch.testing.assert_close(batch.hidden[:, 0, 0], envs.float())
            torch.testing.assert_close(
                batch.observations[GOAL_SENSOR][..., 1], -envs.float().expand(steps, -1)
            )
            assert torch.equal(batch.masks, storage.masks[:steps, envs])
            assert torch.equal(batch.next_masks, storage.masks[1:, envs])
            assert torch.equal(batch.prev_actions, storage.prev_actions[:steps, envs])
            torch.testing.assert_close(batch.bootstrap, storage.values[steps, envs])
        assert sorted(seen) == list(range(n))


def test_minibatches_give_num_mini_batch_groups_when_uneven():
    storage = labelled_storage(2, 6)
    assert len(list(storage.minibatches(4))) == 4


def test_minibatches_normalize_advantages_over_the_rollout():
    storage = labelled_storage(4, 4)
    storage.compute_returns(torch.zeros(4), 0.9, 0.9)
    advantages = torch.cat([b.advantages.flatten() for b in storage.minibatches(1, normalize_advantage=True)])
    assert advantages.mean().item() == pytest.approx(0.0, abs=1e-5)
    assert advantages.std().item() == pytest.approx(1.0, abs=1e-3)


# --- PPO.update ----------------------------------------------------------------------------------------


def random_observations(policy, n: int, g: torch.Generator) -> dict[str, torch.Tensor]:
    """Random goal vectors, and depth images for a policy that sees."""
    observations = {GOAL_SENSOR: torch.rand(n, 2, generator=g)}
    if "depth" in policy.config.sensors:
        observations["depth"] = torch.rand(n, *policy.config.resolution, 1, generator=g)
    return observations


def collect(policy, num_steps: int = 6, n: int = 4, seed: int = 0, gamma: float = 0.99, tau: float = 0.95):
    """A rollout of the policy on random observations, random rewards and some episode ends."""
    g = torch.Generator().manual_seed(seed)
    storage = RolloutStorage(num_steps, random_observations(policy, n, g), policy.initial_state(n))
    hidden = storage.hidden.clone()
    torch.manual_seed(seed)
    with torch.no_grad():
        for _ in range(num_steps):
            observations, prev_actions, masks = storage.current()
            act = policy.act(observations, hidden, prev_actions, masks)
            storage.insert(
                act.action,
                act.log_prob,
                act.value,
                torch.randn(n, generator=g),
                random_observations(policy, n, g),
                torch.rand(n, generator=g) < 0.2,
            )
            hidden = act.hidden
        observations, prev_actions, masks = storage.current()
        bootstrap = policy(observations, hidden, prev_actions, masks).value
    storage.compute_returns(bootstrap, gamma, tau)
    return storage


def full_loss(policy, storage, config) -> float:
    """The PPO loss of the whole rollout under the current parameters."""
    n = storage.length
    with torch.no_grad():
        r = policy.evaluate_actions(
            {k: v[:n] for k, v in storage.observations.items()},
            storage.hidden,
            storage.prev_actions[:n],
            storage.masks[:n],
            storage.actions[:n],
        )
        losses = ppo_losses(
            r.log_prob,
            storage.log_probs[:n],
            storage.advantages[:n],
            r.value,
            storage.values[:n],
            storage.returns[:n],
            r.entropy,
            config,
        )
    return losses.total.item()


def snapshot(policy):
    return [p.detach().clone() for p in policy.parameters()]


def max_change(policy, before) -> float:
    return max((p.detach() - b).abs().max().item() for p, b in zip(policy.parameters(), before, strict=True))


def assert_finite(stats: dict[str, float]) -> None:
    assert set(stats) >= {"action", "value", "entropy", "clip_fraction", "approx_kl", "grad_norm"}
    assert all(math.isfinite(v) for v in stats.values()), stats


def test_update_reduces_the_loss():
    policy = tiny_policy()
    config = PPOConfig(ppo_epoch=4, num_mini_batch=2, use_clipped_value_loss=False, max_grad_norm=1.0)
    storage = collect(policy)
    ppo = PPO(policy, config, lr=1e-2, device=CPU, distributed=False)
    before_loss, before = full_loss(policy, storage, config), snapshot(policy)
    torch.manual_seed(0)
    for _ in range(3):
        assert_finite(ppo.update(storage))
    assert max_change(policy, before) > 1e-3
    assert full_loss(policy, storage, config) < before_loss


def test_update_with_a_tiny_learning_rate_barely_moves():
    policy = tiny_policy()
    config = PPOConfig(ppo_epoch=2, num_mini_batch=2)
    storage = collect(policy)
    ppo = PPO(policy, config, lr=1e-8, device=CPU, distributed=False)
    before = snapshot(policy)
    stats = ppo.update(storage)
    assert_finite(stats)
    # Adam steps are about lr in size: 2 epochs x 2 mini-batches of 1e-8
    assert 0 < max_change(policy, before) < 1e-6
    # the first mini-batch sees the policy that collected the rollout, so ratios are ~1: nothing clipped
    assert stats["clip_fraction"] == 0.0
    assert abs(stats["approx_kl"]) < 1e-5


def test_lamb_optimizer_update():
    timm_optim = pytest.importorskip("timm.optim")
    policy = tiny_policy()
    config = PPOConfig(optimizer="lamb", weight_decay=0.01, ppo_epoch=1, num_mini_batch=2, max_grad_norm=1.0)
    ppo = PPO(policy, config, lr=1e-3, device=CPU, distributed=False)
    assert isinstance(ppo.optimizer, timm_optim.Lamb)
    # biases and other 1-D parameters get no weight decay
    decays = {g["weight_decay"]: sum(p.numel() for p in g["params"]) for g in ppo.optimizer.param_groups}
    assert set(decays) == {0.0, 0.01}
    n_params = sum(p.numel() for p in policy.parameters())
    assert sum(decays.values()) == n_params
    before = snapshot(policy)
    assert_finite(ppo.update(collect(policy)))
    assert max_change(policy, before) > 0


@pytest.mark.skipif(
    not ppo_module.cpu_has_native_bfloat16(),
    reason="this CPU has no native bfloat16 (oneDNN refuses its LSTM there)",
)
def test_amp_update_on_cpu_uses_bfloat16():
    policy = tiny_policy()
    config = PPOConfig(amp=True, ppo_epoch=1, num_mini_batch=2)
    ppo = PPO(policy, config, lr=1e-3, device=CPU, distributed=False)
    assert ppo.amp_dtype == torch.bfloat16
    assert not ppo.scaler.is_enabled()  # loss scaling is only for float16
    with ppo.autocast():
        assert torch.is_autocast_enabled("cpu")
    before = snapshot(policy)
    assert_finite(ppo.update(collect(policy)))
    assert max_change(policy, before) > 0
    assert all(p.dtype == torch.float32 for p in policy.parameters())  # master weights stay float32


def test_amp_on_a_cpu_without_bfloat16_trains_in_float32(monkeypatch):
    monkeypatch.setattr(ppo_module, "cpu_has_native_bfloat16", lambda: False)
    with pytest.warns(UserWarning, match="no native bfloat16"):
        ppo = PPO(tiny_policy(), PPOConfig(amp=True), lr=1e-3, device=CPU, distributed=False)
    assert ppo.amp_dtype is None
    with ppo.autocast():
        assert not torch.is_autocast_enabled("cpu")


def test_vtrace_update_runs():
    policy = tiny_policy()
    config = PPOConfig(vtrace=True, ppo_epoch=2, num_mini_batch=2, use_normalized_advantage=True)
    ppo = PPO(policy, config, lr=1e-3, device=CPU, distributed=False)
    before = snapshot(policy)
    assert_finite(ppo.update(collect(policy)))
    assert max_change(policy, before) > 0


def test_vtrace_update_on_policy_equals_gae_update_with_tau_1():
    # On-policy, V-trace targets are TD(lambda) returns and, with lambda = tau = 1, its advantages are GAE's:
    # the first PPO step must then be the same with and without V-trace.
    config = PPOConfig(tau=1.0, ppo_epoch=1, num_mini_batch=1, use_clipped_value_loss=False)
    gae_policy = tiny_policy()
    vtrace_policy = copy.deepcopy(gae_policy)
    storage = collect(gae_policy, tau=1.0)
    gae = PPO(gae_policy, config, lr=1e-3, device=CPU, distributed=False).update(storage)
    vtr = PPO(
        vtrace_policy, dataclasses.replace(config, vtrace=True), lr=1e-3, device=CPU, distributed=False
    ).update(storage)
    for key in ("action", "value", "entropy"):
        assert vtr[key] == pytest.approx(gae[key], rel=1e-4, abs=1e-6), key
    for a, b in zip(gae_policy.parameters(), vtrace_policy.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


def test_set_progress_decays_linearly():
    policy = tiny_policy()
    ppo = PPO(policy, PPOConfig(use_linear_lr_decay=True), lr=1e-3, device=CPU, distributed=False)
    assert ppo.set_progress(0.25, update=10) == pytest.approx(0.75e-3)
    assert ppo.optimizer.param_groups[0]["lr"] == pytest.approx(0.75e-3)
    constant = PPO(policy, PPOConfig(), lr=1e-3, device=CPU, distributed=False)
    assert constant.set_progress(0.25, update=10) == pytest.approx(1e-3)


@pytest.mark.parametrize(
    ("update", "factor"), [(0, 0.0), (2, 0.0), (3, 0.25), (4, 0.5), (6, 1.0), (100, 1.0)]
)
def test_actor_warmup_schedule_hand_computed(update, factor):
    """3 updates of the critic alone, then the actor's learning rate rises over 4: 1/4, 2/4, 3/4, 1."""
    config = PPOConfig(critic_warmup_updates=3, actor_warmup_updates=4)
    assert actor_lr_factor(config, update) == factor
    assert actor_lr_factor(PPOConfig(), update) == 1.0
    # With actor_lr_scale the actor rises to that share of the critic's rate instead.
    scaled = dataclasses.replace(config, actor_lr_scale=0.1)
    assert actor_lr_factor(scaled, update) == pytest.approx(factor / 10)


def test_actor_learns_at_its_share_of_the_critics_rate():
    ppo = PPO(tiny_policy(), PPOConfig(actor_lr_scale=0.1), lr=1e-3, device=CPU, distributed=False)
    assert ppo.set_progress(0.0, update=0) == pytest.approx(1e-3)
    rates = {g["role"]: g["lr"] for g in ppo.optimizer.param_groups}
    assert rates == pytest.approx({"actor": 1e-4, "critic": 1e-3})


@pytest.mark.parametrize("optimizer", ["adam", "lamb"])
def test_critic_warmup_moves_only_the_critic_then_everything(optimizer):
    policy = tiny_policy()
    config = PPOConfig(
        optimizer=optimizer, critic_warmup_updates=1, actor_warmup_updates=2, max_grad_norm=1.0
    )
    ppo = PPO(policy, config, lr=1e-3, device=CPU, distributed=False)
    critic = {id(p) for p in policy.critic.parameters()}
    roles = {g["role"]: sum(p.numel() for p in g["params"]) for g in ppo.optimizer.param_groups}
    assert roles["critic"] == sum(p.numel() for p in policy.critic.parameters())
    assert sum(roles.values()) == sum(p.numel() for p in policy.parameters())

    def changed(before):
        return {id(p) for p, b in zip(policy.parameters(), before, strict=True) if not torch.equal(p, b)}

    storage = collect(policy)
    before = snapshot(policy)
    ppo.set_progress(0.0, update=0)
    ppo.update(storage)
    assert changed(before) == critic  # the critic head learnt; encoder, core and action head held still
    before = snapshot(policy)
    ppo.set_progress(0.1, update=1)  # the actor at half its learning rate
    ppo.update(storage)
    assert changed(before) > critic
