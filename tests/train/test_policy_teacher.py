"""The policy teacher (navzoo.train.teacher.PolicyTeacher): a trained policy labels each step with a draw
from its distribution, carrying its memory through the episode as the simulator plays it."""

from pathlib import Path

import pytest
import torch

import navzoo
from navzoo.errors import ConfigError
from navzoo.models.weights import WEIGHTS_NAME, save_pretrained, weights_digest
from navzoo.sim import MOVE_FORWARD, TURN_LEFT, BatchSim, SimConfig
from navzoo.train.checkpoint import CheckpointError
from navzoo.train.config import load_config
from navzoo.train.config_blocks import ImitationConfig, PPOConfig
from navzoo.train.imitation import TEACHER_PROBS, WEIGHTS_DIGEST, DAgger, TeacherLabels
from navzoo.train.run_state import check_same_teacher
from navzoo.train.teacher import PolicyTeacher
from navzoo.train.trainer import train
from tests.support import distilling
from tests.train.test_ppo import labelled_storage, tiny_policy

pytestmark = pytest.mark.usefixtures("one_thread")

BLIND = "navzoo-pointnav-blind"


@pytest.fixture
def blind_sim():
    sim = BatchSim(SimConfig(split="train", num_envs=64, sensors=()))
    yield sim
    sim.close()


def test_labels_are_draws_from_the_teacher_s_distribution(blind_sim):
    """Over many steps the labels' frequencies are the teacher's mean probabilities, and labels other than
    its likeliest action come as often as the probability it leaves to the others (the blind agent is unsure
    often enough for that to show)."""
    torch.manual_seed(0)
    teacher = PolicyTeacher(blind_sim, BLIND)
    observations, first = blind_sim.reset(), torch.ones(64, dtype=torch.bool)
    counts, probs = torch.zeros(4), torch.zeros(4)
    others, others_prob = 0, 0.0
    for _ in range(60):
        labels, bearings = teacher.labels(observations, first)
        assert bearings.isnan().all()
        step_probs = teacher.agent.last_action_probs
        counts += torch.bincount(labels, minlength=4)
        probs += step_probs.sum(0)
        best = step_probs.max(1)
        others += int((labels != best.indices).sum())
        others_prob += float((1 - best.values).sum())
        teacher.taken(labels)
        observations, _, first, _ = blind_sim.step(labels)
    total = counts.sum()
    assert (counts / total - probs / total).abs().max() < 0.02
    assert others_prob / total > 0.05  # enough doubt that an argmax teacher would fail the next line
    assert abs(others - others_prob) / total < 0.02


def test_the_teacher_remembers_the_actions_the_simulator_took(blind_sim):
    """Where the learner drives, the teacher's previous action is the learner's, and its recurrent state
    follows the episode: its distribution at every step is that of the model run by hand on the same
    observations with the actions taken."""
    torch.manual_seed(0)
    teacher = PolicyTeacher(blind_sim, BLIND)
    model = navzoo.load(BLIND)
    hidden = model.initial_state(64)
    prev_actions = torch.zeros(64, dtype=torch.long)
    observations, first = blind_sim.reset(), torch.ones(64, dtype=torch.bool)
    for _ in range(40):
        labels, _ = teacher.labels(observations, first)
        with torch.inference_mode():
            out = model(observations, hidden, prev_actions, ~first)
        torch.testing.assert_close(teacher.agent.last_action_probs, out.distribution.probs)
        learner = torch.randint(0, 3, (64,)) + 1  # the learner never stops: episodes run on
        assert not torch.equal(learner, labels)
        teacher.taken(learner)
        hidden, prev_actions = out.hidden, learner
        observations, _, first, _ = blind_sim.step(learner)


def test_a_restored_teacher_continues_its_episodes_and_draws(blind_sim):
    torch.manual_seed(0)
    teacher = PolicyTeacher(blind_sim, BLIND)
    observations, first = blind_sim.reset(), torch.ones(64, dtype=torch.bool)
    for _ in range(10):
        labels, _ = teacher.labels(observations, first)
        teacher.taken(labels)
        observations, _, first, _ = blind_sim.step(labels)
    again = PolicyTeacher(blind_sim, BLIND)
    again.load_state_dict(teacher.state_dict())
    assert torch.equal(again.labels(observations, first)[0], teacher.labels(observations, first)[0])
    torch.testing.assert_close(again.agent.last_action_probs, teacher.agent.last_action_probs)


@pytest.mark.parametrize("drives", [True, False])
def test_teacher_labels_drive_with_a_policy_teacher(blind_sim, drives):
    """At share 1 the teacher drives (DAgger's start); under kickstarting the learner does, and the teacher
    remembers the learner's action. The rollout gets the distribution the label was drawn from."""
    config = ImitationConfig(teacher="policy", teacher_model=BLIND)
    labelling = TeacherLabels(blind_sim, config, drives=drives)
    learner = torch.full((64,), 2)
    observations, first = blind_sim.reset(), torch.ones(64, dtype=torch.bool)
    actions, labels, _ = labelling.drive(observations, ~first, learner, 0)
    assert torch.equal(actions, labels if drives else learner)
    assert torch.equal(labelling.teacher.agent.prev_actions, actions)
    model = navzoo.load(BLIND)
    with torch.inference_mode():
        out = model(observations, model.initial_state(64), torch.zeros(64, dtype=torch.long), ~first)
    torch.testing.assert_close(labelling.head_targets(observations)[TEACHER_PROBS], out.distribution.probs)


def test_an_rgb_learner_gets_the_depth_a_depth_teacher_reads():
    # Without the depth head, only the teacher's camera asks for depth.
    config = load_config("navzoo-pointnav-rgb", ["imitation.depth_weight=0"])  # distils navzoo-pointnav-depth
    assert config.teacher_only_sensors() == ("depth",)
    sim = BatchSim(config.sim_for_rank(0).replace(num_envs=4))
    try:
        teacher = PolicyTeacher(sim, "navzoo-pointnav-depth")
        labels, _ = teacher.labels(sim.reset(), torch.ones(4, dtype=torch.bool))
        assert labels.shape == (4,)
    finally:
        sim.close()


@pytest.mark.parametrize(
    "sim_config, problem",
    [
        (SimConfig(sensors=("depth",), resolution=(32, 32)), r"resolution.*\(64, 64\): the teacher"),
        (SimConfig(sensors=("rgb",), resolution=(64, 64)), r"sensors including depth: the teacher"),
    ],
)
def test_a_teacher_whose_images_the_simulator_does_not_render_is_refused(sim_config, problem):
    sim = BatchSim(sim_config.replace(split="train", num_envs=4))
    try:
        with pytest.raises(ConfigError, match=rf"imitation\.teacher_model=.*{problem}"):
            PolicyTeacher(sim, "navzoo-pointnav-depth")
    finally:
        sim.close()


def test_a_teacher_restored_without_memory_starts_every_episode_afresh(blind_sim):
    """A checkpoint of a run that had another teacher holds no policy teacher's memory: its next labels are
    those of a teacher whose every episode has just begun."""
    torch.manual_seed(0)
    teacher = PolicyTeacher(blind_sim, BLIND)
    observations = blind_sim.reset()
    teacher.labels(observations, torch.ones(64, dtype=torch.bool))
    teacher.taken(torch.full((64,), 1))
    teacher.load_state_dict({})
    teacher.labels(observations, torch.zeros(64, dtype=torch.bool))
    fresh = PolicyTeacher(blind_sim, BLIND)
    fresh.labels(observations, torch.ones(64, dtype=torch.bool))
    torch.testing.assert_close(teacher.agent.last_action_probs, fresh.agent.last_action_probs)


@pytest.mark.parametrize(
    "overrides, field",
    [
        (["imitation.teacher_model=null"], "imitation.teacher_model=None"),
        (["imitation.teacher=map-planner"], "imitation.teacher_model"),
        (["imitation.bearing_weight=1"], "imitation.bearing_weight"),
        (["imitation.inflection_weight=3"], r"imitation\.inflection_weight=3.*1 with teacher policy"),
        (["imitation.early_stop_weight=10"], r"imitation\.early_stop_weight=10.*0 with teacher policy"),
        (
            [f"stages=[{{from_frames: 4096, algorithm: dagger, imitation: {{teacher_model: {BLIND}}}}}]"],
            r"stages\.0\.imitation\.teacher_model",
        ),
    ],
)
def test_policy_teacher_settings_that_cannot_work_are_refused(overrides, field):
    with pytest.raises(ConfigError, match=field):
        load_config("navzoo-pointnav-depth", ["stages=[]", *distilling(BLIND), *overrides])


def test_dagger_learns_the_policy_teacher_s_distribution_not_its_draws():
    """Every drawn label is `forward`, but the teacher's distribution is half forward, half left: the
    learner ends near the distribution, where cloning the labels would make it sure of forward."""
    policy = tiny_policy()
    storage = labelled_storage(8, 6)
    storage.teacher_actions.fill_(MOVE_FORWARD)
    distribution = torch.zeros(4)
    distribution[[MOVE_FORWARD, TURN_LEFT]] = 0.5
    storage.head_targets[TEACHER_PROBS] = distribution.expand(8, 6, 4).clone()
    config = PPOConfig(ppo_epoch=4, num_mini_batch=1, lr=1e-2)
    dagger = DAgger(policy, config, ImitationConfig(), config.lr, torch.device("cpu"), distributed=False)
    for _ in range(30):
        dagger.update(storage)
    with torch.no_grad():
        batch = next(storage.minibatches(1))
        out = policy(batch.observations, batch.hidden, batch.prev_actions, batch.masks)
    torch.testing.assert_close(out.distribution.probs.mean((0, 1)), distribution, atol=0.05, rtol=0)


def test_a_teacher_that_cannot_be_loaded_is_named(tmp_path):
    missing = tmp_path / "runs" / "teacher"
    overrides = ["stages=[]", *distilling(str(missing))]
    with pytest.raises(ConfigError, match=r"imitation\.teacher_model=.*teacher.*not an existing folder"):
        load_config("navzoo-pointnav-depth", overrides)
    # A folder whose weights are gone is refused with the config, before a run folder is made.
    folder = save_pretrained(navzoo.load(BLIND), missing)
    (folder / WEIGHTS_NAME).unlink()
    with pytest.raises(ConfigError, match=r"imitation\.teacher_model=.*model\.safetensors does not exist"):
        load_config("navzoo-pointnav-depth", ["stages=[]", *distilling(str(folder))])


def test_a_resume_whose_teacher_model_now_loads_another_model_is_refused(tmp_path):
    blind = navzoo.load(BLIND)
    teacher = save_pretrained(blind, tmp_path / "teacher", provenance=blind.provenance)
    small = ["sim.num_envs=4", "ppo.num_steps=8", "ppo.num_mini_batch=1", "torch_threads=1"]
    overrides = ["algorithm=dagger", *distilling(str(teacher)), *small]
    train(load_config("pointnav-blind", [*overrides, "total_frames=32"]), tmp_path / "run")
    # The folder now holds another model: the same architecture, from another run.
    save_pretrained(blind, teacher, provenance={**blind.provenance, "run": "another"})
    refusal = r"trained with the teacher .*teacher \(run '.*loads .*'another'"
    with pytest.raises(CheckpointError, match=refusal):
        train(load_config("pointnav-blind", [*overrides, "total_frames=64"]), tmp_path / "run", resume=True)
    # Other weights under the same provenance: the teacher is pinned by its numbers too.
    with torch.no_grad():
        next(blind.parameters()).add_(0.01)
    save_pretrained(blind, teacher, provenance=blind.provenance)
    digests = r"frames, weights [0-9a-f]{12}\), and .* weights [0-9a-f]{12}\)"
    with pytest.raises(CheckpointError, match=digests):
        train(load_config("pointnav-blind", [*overrides, "total_frames=64"]), tmp_path / "run", resume=True)


def test_a_checkpoint_without_the_teacher_s_weights_digest_is_checked_by_provenance():
    now = {"model": BLIND, "run": "r", "frames": 10, WEIGHTS_DIGEST: "ab" * 32}
    before_pinning = {key: value for key, value in now.items() if key != WEIGHTS_DIGEST}
    check_same_teacher(before_pinning, now, Path("run"))
    with pytest.raises(CheckpointError, match="'other'"):
        check_same_teacher({**before_pinning, "run": "other"}, now, Path("run"))


def test_the_teacher_record_holds_the_digest_of_the_weights_it_labels_with(blind_sim):
    record = TeacherLabels(blind_sim, ImitationConfig(teacher="policy", teacher_model=BLIND)).policy_record()
    assert record is not None
    assert record[WEIGHTS_DIGEST] == weights_digest(navzoo.load(BLIND))
    assert (record["model"], record["frames"]) == (BLIND, navzoo.load(BLIND).provenance["frames"])
