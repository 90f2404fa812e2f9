"""Transfer to Flee and Explore (navzoo.transfer): what each of the five settings freezes, the neural
controller's planner, the dummy goal, and short real `navzoo finetune` runs on the embedded simulator.

The base model is navzoo's own RGB PointGoal agent, shipped in the package; what reads the goal is also
checked on a policy of the other habitat layout (DD-PPO's goal embedding, or PointNavBaselineNet's raw
reading). The ImageNet weights cannot be
downloaded here; the ImageNet-encoder setting is run from a local weights file instead (a timm resnet18
saved by the test: the loading path is what is checked, not ImageNet quality), and its refusal to run
without weights is checked with the Hub offline.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

import navzoo
from navzoo.errors import ConfigError
from navzoo.models import (
    GOAL_VECTOR_KEY,
    VISUAL_FEATURES_KEY,
    ActorCritic,
    NeuralControllerPolicy,
    PointNavPolicy,
    VisualEncoder,
)
from navzoo.models.metadata import training_records
from navzoo.train import checkpoint as ckpt
from navzoo.transfer.config import TransferConfig, transfer_train_config
from navzoo.transfer.finetune import checkpoint_policy, finetune, load_run, policy_spec
from navzoo.transfer.imagenet import ImageNetWeightsError
from navzoo.transfer.settings import SETTINGS, build_setting, setting_id
from navzoo.transfer.sweep import EvalPlan, run_sweep
from tests.train.test_train_distributed import _in_process, _run, _torchrun

BASE = "navzoo-pointnav-rgb"
NUM_ENVS, NUM_STEPS = 4, 8
FRAMES = 2 * NUM_ENVS * NUM_STEPS  # two updates
TINY = [
    f"sim.num_envs={NUM_ENVS}",
    f"ppo.num_steps={NUM_STEPS}",
    "ppo.num_mini_batch=2",
    "sim.scene_families=[apartment-s]",
    "torch_threads=1",
    "checkpoint_every=1",
]


@pytest.fixture(scope="module")
def base() -> PointNavPolicy:
    torch.set_num_threads(1)
    return navzoo.load(BASE)


@pytest.fixture(scope="module", params=["shipped", "other-layout"])
def any_layout(request, base) -> PointNavPolicy:
    """The shipped base, and a (random) policy of the same cameras in the other habitat layout: DD-PPO's
    goal embedding (net="resnet") or PointNavBaselineNet's raw (rho, phi) (net="baseline")."""
    if request.param == "shipped":
        return base
    torch.manual_seed(1)
    other = "resnet" if base.config.net == "baseline" else "baseline"
    return PointNavPolicy(base.config.replace(net=other)).eval()


def _goal_share(policy: PointNavPolicy) -> int:
    """Parameters that read the goal: its embedding and the recurrent core's weights on it, or the core's
    weights on the raw (rho, phi)."""
    rows = policy.net.state_encoder.rnn.weight_ih_l0.shape[0]
    if policy.net.tgt_embeding is None:
        return rows * 2
    return _params(policy.net.tgt_embeding) + rows * 32


def _goal_inputs(policy: PointNavPolicy) -> list[torch.Tensor]:
    """Collects what the policy's recurrent core reads as the goal at each call: the goal embedding's
    input [rho, cos(-phi), sin(-phi)], or the raw (rho, phi) columns of a baseline-layout core's input."""
    seen: list[torch.Tensor] = []
    if policy.net.tgt_embeding is not None:
        policy.net.tgt_embeding.register_forward_hook(lambda _m, inputs, _o: seen.append(inputs[0]))
    else:
        core = policy.net.state_encoder
        core.register_forward_hook(lambda _m, inputs, _o: seen.append(inputs[0][..., -2:].flatten(0, -2)))
    return seen


@pytest.fixture(scope="module")
def imagenet_file(tmp_path_factory) -> Path:
    """Stands in for a downloaded ImageNet file: a timm resnet18 state dict (random, but known)."""
    import timm

    torch.manual_seed(123)
    model = timm.create_model("resnet18", num_classes=1000)
    path = tmp_path_factory.mktemp("imagenet") / "resnet18.safetensors"
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, path)
    return path


def _params(module: torch.nn.Module | None) -> int:
    return 0 if module is None else sum(p.numel() for p in module.parameters())


def _trainable(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


def _same_tensors(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def _assert_same(a: torch.nn.Module, b: torch.nn.Module) -> None:
    assert _same_tensors(a, b), "weights were not copied from the PointGoal model"


def _frozen_names(policy: torch.nn.Module) -> set[str]:
    """Parameters without gradients, and every tensor (buffers too) of a frozen visual encoder."""
    names = {k for k, p in policy.named_parameters() if not p.requires_grad}
    for prefix, module in policy.named_modules():
        if isinstance(module, VisualEncoder) and module.frozen:
            names |= {f"{prefix}.{k}" for k in module.state_dict()}
    return names


def _build(setting: str, base: PointNavPolicy, imagenet_file: Path | None = None):
    extra = {"imagenet_weights": str(imagenet_file)} if setting == "imagenet-encoder" else {}
    torch.manual_seed(0)
    return build_setting(setting, base, planner_hidden_size=64, **extra)[0]


# --- what each setting builds and freezes ------------------------------------------------------------------
def test_settings_freeze_exactly_their_encoder_or_controller(any_layout, imagenet_file):
    base = any_layout
    whole = _params(base)
    encoder = _params(base.visual_encoder)
    goal_embedding = _goal_share(base)

    scratch = _build("scratch", base)
    # No GPS+Compass: the goal embedding is gone, everything else is trained.
    assert scratch.config.sensors == ("rgb",) and scratch.net.tgt_embeding is None
    assert _trainable(scratch) == _params(scratch) == whole - goal_embedding

    pointgoal_encoder = _build("pointgoal-encoder", base)
    assert _trainable(pointgoal_encoder) == whole - goal_embedding - encoder
    _assert_same(pointgoal_encoder.visual_encoder, base.visual_encoder)
    assert not _same_tensors(pointgoal_encoder.net.state_encoder, base.net.state_encoder)

    finetuned = _build("pointgoal-finetune", base)
    assert _trainable(finetuned) == whole - encoder
    for name, tensor in base.state_dict().items():
        if not name.startswith("critic."):
            torch.testing.assert_close(finetuned.state_dict()[name], tensor, rtol=0, atol=0)
    assert not torch.equal(finetuned.critic.fc.weight, base.critic.fc.weight)  # re-initialised
    assert finetuned.config.dummy_goal == (5.0, 0.0) and not finetuned.config.has_goal

    imagenet = _build("imagenet-encoder", base, imagenet_file)
    backbone = imagenet.visual_encoder.backbone.model
    assert imagenet.config.backbone == "timm:resnet18" and not backbone.training
    assert _trainable(imagenet) == _params(imagenet) - _params(imagenet.visual_encoder)
    from safetensors.torch import load_file

    saved = load_file(imagenet_file)
    for name, tensor in backbone.state_dict().items():
        torch.testing.assert_close(tensor, saved[name], rtol=0, atol=0)

    controller = _build("neural-controller", base)
    planner = _params(controller) - _params(controller.controller)
    assert _trainable(controller) == planner
    assert _trainable(controller.controller) == 0
    _assert_same(controller.controller, base)
    assert controller.controller.visual_encoder is controller.visual_encoder  # shared with the planner
    # Appendix G: a 2-layer LSTM planner (here 64 wide) fed visual features and the previous action.
    rnn = controller.state_encoder.rnn
    assert isinstance(rnn, torch.nn.LSTM) and rnn.num_layers == 2 and rnn.input_size == 64 + 32


def test_setting_names_and_bad_bases(base):
    assert setting_id("PointGoalNavEncoder-FinetunePolicy") == "pointgoal-finetune"
    assert setting_id("neural-controller") == "neural-controller"
    with pytest.raises(ConfigError, match="'scratch', 'imagenet-encoder'"):
        setting_id("imagenet")
    flee_model = _build("scratch", base)
    from navzoo.transfer.settings import check_base

    with pytest.raises(ConfigError, match="a PointGoal policy"):
        check_base(flee_model, "runs/flee")
    blind = navzoo.load("navzoo-pointnav-blind")
    with pytest.raises(ConfigError, match="reuse or copy the base's visual encoder"):
        check_base(blind, "navzoo-pointnav-blind", "pointgoal-encoder")
    with pytest.raises(ConfigError, match="scratch run trains the base's architecture on its cameras"):
        check_base(blind, "navzoo-pointnav-blind", "scratch")


def test_imagenet_setting_refuses_to_run_without_weights(base, hub_offline, tmp_path):
    with pytest.raises(ImageNetWeightsError, match=r"will not run with random weights.*--imagenet-weights"):
        build_setting("imagenet-encoder", base)
    with pytest.raises(ImageNetWeightsError, match="does not exist"):
        build_setting("imagenet-encoder", base, imagenet_weights=str(tmp_path / "missing.safetensors"))


def test_dummy_goal_is_fed_to_the_goal_input(any_layout):
    base = any_layout
    policy = _build("pointgoal-finetune", base)
    seen = _goal_inputs(policy)
    n = 3
    obs = {"rgb": torch.randint(0, 255, (n, 64, 64, 3), dtype=torch.uint8)}
    masks = torch.ones(n, dtype=torch.bool)
    with torch.no_grad():
        policy(obs, policy.initial_state(n), torch.zeros(n, dtype=torch.long), masks)
    rho, phi = 5.0, 0.0
    embedded = policy.net.tgt_embeding is not None
    goal = [rho, math.cos(-phi), math.sin(-phi)] if embedded else [rho, phi]
    torch.testing.assert_close(seen[0], torch.tensor([goal]).expand(n, len(goal)))
    # The same images give the PointGoal policy's actions for a GPS+Compass reading equal to the dummy.
    pointgoal = {**obs, "pointgoal_with_gps_compass": torch.tensor([[rho, phi]]).expand(n, 2)}
    with torch.no_grad():
        a = policy(obs, policy.initial_state(n), torch.zeros(n, dtype=torch.long), masks).distribution.logits
        b = base(
            pointgoal, base.initial_state(n), torch.zeros(n, dtype=torch.long), masks
        ).distribution.logits
    torch.testing.assert_close(a, b)


# --- the neural controller ---------------------------------------------------------------------------
def test_planner_gradients_reach_through_the_frozen_controller(any_layout):
    policy = _build("neural-controller", any_layout)
    policy.train()
    t, n = 6, 3
    obs = {"rgb": torch.randint(0, 255, (t, n, 64, 64, 3), dtype=torch.uint8)}
    masks = torch.ones(t, n, dtype=torch.bool)
    masks[0] = False
    masks[4, 1] = False
    prev, actions = torch.randint(0, 4, (t, n)), torch.randint(0, 4, (t, n))
    result = policy.evaluate_actions(obs, policy.initial_state(n), prev, masks, actions)
    result.log_prob.sum().backward()  # the actor loss alone: its only path to the planner is the controller
    for name in ("goal_head.weight", "state_encoder.rnn.weight_hh_l0", "visual_fc.1.weight"):
        grad = policy.get_parameter(name).grad
        assert grad is not None and grad.abs().sum() > 0, name
    assert all(p.grad is None for p in policy.controller.parameters())
    assert policy.critic.fc.weight.grad is None  # the value is the planner's own head
    assert not policy.visual_encoder.training  # the frozen encoder keeps its statistics fixed

    # Stepping one step at a time gives the same log-probs as the whole sequence.
    hidden, step_log_probs = policy.initial_state(n), []
    with torch.no_grad():
        for i in range(t):
            out = policy({"rgb": obs["rgb"][i]}, hidden, prev[i], masks[i])
            step_log_probs.append(out.distribution.log_prob(actions[i]))
            hidden = out.hidden
    torch.testing.assert_close(torch.stack(step_log_probs), result.log_prob.detach(), atol=1e-5, rtol=1e-5)


def test_planner_goal_is_elu_magnitude_and_tanh_direction(any_layout):
    policy = _build("neural-controller", any_layout)
    raw = torch.tensor([[-3.0, 2.0, -0.5], [1.0, 0.1, 0.0]])
    with torch.no_grad():
        policy.goal_head.weight.zero_()
        policy.goal_head.bias.zero_()
        goal = policy.goal_vector(torch.zeros(2, 64))
        assert torch.allclose(goal, torch.tensor([[0.75, 0.0, 0.0]] * 2))
        policy.goal_head.bias.copy_(raw[0])
        goal = policy.goal_vector(torch.zeros(1, 64))[0]
    assert goal[0] == pytest.approx(math.exp(-3.0) - 1 + 0.75)
    assert goal[1:].tolist() == pytest.approx([math.tanh(2.0), math.tanh(-0.5)])
    assert goal[1:].norm() != pytest.approx(1.0)  # not renormalised

    # The goal reaches the controller as its goal-embedding input, or as the (rho, phi) it stands for.
    seen = _goal_inputs(policy.controller)
    n = 2
    obs = {"rgb": torch.randint(0, 255, (n, 64, 64, 3), dtype=torch.uint8)}
    with torch.no_grad():
        policy.goal_head.bias.copy_(torch.tensor([0.5, -0.3, 0.8]))  # a goal behind, to the left
        out = policy(
            obs, policy.initial_state(n), torch.zeros(n, dtype=torch.long), torch.ones(n, dtype=bool)
        )
    goal = out.features
    if policy.controller.net.tgt_embeding is None:
        # cos(-phi) = tanh(-0.3) and sin(-phi) = tanh(0.8) (not normalised): phi = -(pi - atan(tanh(0.8) /
        # tanh(0.3))), behind and to the left (navzoo's phi is positive to the right)
        phi = -(math.pi - math.atan(math.tanh(0.8) / math.tanh(0.3)))
        goal = torch.tensor([[goal[0, 0].item(), phi]]).expand(n, 2)
    torch.testing.assert_close(seen[0], goal)
    assert GOAL_VECTOR_KEY == "goal_vector" and VISUAL_FEATURES_KEY == "visual_features"


# --- real runs -------------------------------------------------------------------------------------
def _finetune(setting: str, task: str, run_dir: Path, base, extra=(), **options):
    transfer = TransferConfig(task=task, setting=setting, base=BASE, planner_hidden_size=64, **options)
    config = transfer_train_config(base, task, FRAMES, [*TINY, *extra])
    return transfer, finetune(transfer, config, run_dir, base=base)


@pytest.mark.parametrize(
    "setting,task",
    [
        ("scratch", "flee"),
        ("imagenet-encoder", "explore"),
        ("pointgoal-encoder", "flee"),
        ("pointgoal-finetune", "explore"),
        ("neural-controller", "flee"),
    ],
)
def test_finetune_runs_and_changes_only_what_it_trains(setting, task, base, imagenet_file, tmp_path):
    options = {"imagenet_weights": str(imagenet_file)} if setting == "imagenet-encoder" else {}
    # Episodes of 8 steps, so the task's episode metrics come back within two short rollouts.
    transfer, result = _finetune(setting, task, tmp_path, base, ["sim.max_episode_steps=8"], **options)
    assert result.frames == FRAMES and result.updates == 2
    metric = {"flee": "episode/flee_distance", "explore": "episode/visited_cells"}[task]
    assert math.isfinite(result.metrics[metric]) and result.metrics[metric] >= 0
    assert "episode/spl" not in result.metrics

    # With the run's seed (0): the policy each worker started from.
    start = policy_spec(transfer, base, seed=0).policy
    trained, frames = checkpoint_policy(start, ckpt.latest_checkpoint(tmp_path))
    assert frames == FRAMES
    frozen = _frozen_names(start)
    assert frozen or setting == "scratch"
    changed = {k for k, v in trained.state_dict().items() if not torch.equal(v, start.state_dict()[k])}
    assert not frozen & changed, f"frozen parameters changed: {sorted(frozen & changed)[:5]}"
    assert "critic.fc.weight" in changed
    trainable = {k for k, p in start.named_parameters() if p.requires_grad}
    assert len(changed & trainable) >= len(trainable) // 2

    # The exported model is a Flee/Explore model that remembers its base and setting.
    exported = ActorCritic.from_folder(tmp_path)
    assert exported.task == task and type(exported) is type(start)
    assert exported.provenance["source"] == "navzoo finetune"
    assert exported.provenance["base_model"] == BASE
    assert exported.provenance["transfer"]["setting"] == setting
    assert load_run(tmp_path)[0] == transfer


def test_finetune_cli_resumes_and_runs_under_torchrun(tmp_path, hub_offline):
    run_dir = tmp_path / "run"
    common = [
        "--task",
        "explore",
        "--setting",
        "pointgoal-finetune",
        "--from",
        BASE,
        "--run-dir",
        str(run_dir),
    ]
    out, _ = _in_process("finetune", *common, "--frames", str(FRAMES), *TINY)
    assert "done: 2 updates" in out
    out, _ = _in_process("finetune", "--resume", "--run-dir", str(run_dir), "--frames", str(2 * FRAMES))
    assert "done: 4 updates" in out
    events = [json.loads(line) for line in (run_dir / "log.jsonl").read_text().splitlines()]
    assert [e["event"] for e in events if e.get("event") in ("start", "resume")] == ["start", "resume"]
    # A run trained on CUDA resumes on a machine without it when the override says where.
    saved = run_dir / "train_config.yaml"
    as_trained = saved.read_text()
    saved.write_text(as_trained.replace("device: cpu", "device: cuda"))
    if not torch.cuda.is_available():
        _, err = _in_process("finetune", "--resume", "--run-dir", str(run_dir), "--print-config", expect_rc=2)
        assert "no CUDA device" in err
    out, _ = _in_process(
        "finetune", "--resume", "--run-dir", str(run_dir), "--print-config", "sim.device=cpu"
    )
    assert "device: cpu" in out
    saved.write_text(as_trained)

    # Two DD-PPO workers: each collects its own environments, the gradients are all-reduced.
    two = tmp_path / "two"
    args = [
        "-m",
        "navzoo.cli.main",
        "finetune",
        *common[:-1],
        str(two),
        "--frames",
        str(2 * FRAMES),
        *TINY,
    ]
    out, _ = _run(_torchrun(*args), tmp_path, timeout=240)
    assert "done: 2 updates" in out
    provenance = ActorCritic.from_folder(two).provenance
    assert provenance["workers"] == 2 and provenance["frames"] == 2 * FRAMES

    _, err = _in_process(
        "finetune", "--resume", "--run-dir", str(run_dir), "--setting", "scratch", expect_rc=2
    )
    assert "'pointgoal-finetune' as saved in the run" in err
    _in_process("finetune", "--resume", "--run-dir", str(tmp_path / "nowhere"), expect_rc=2)
    best = ["--task", "flee", "--setting", "best", "--from", BASE, "--run-dir", str(tmp_path / "best")]
    _, err = _in_process("finetune", *best, expect_rc=2)
    assert "setting" in err and "pointgoal-finetune" in err

    # A run that fails before training writes nothing, so the same command works once the cause is fixed.
    failed = tmp_path / "failed"
    imagenet = ["--task", "flee", "--setting", "imagenet-encoder", "--from", BASE, "--run-dir", str(failed)]
    _, err = _in_process("finetune", *imagenet, expect_rc=2)  # hub_offline: no ImageNet weights to get
    assert "--imagenet-weights" in err and not failed.exists()
    # A folder with a model in it is not trained over unless --overwrite says so.
    model = shutil.copytree(navzoo.zoo.loader.model_entry(BASE).packaged, tmp_path / "a-model")
    _, err = _in_process("finetune", *common[:-1], str(model), "--frames", str(FRAMES), *TINY, expect_rc=2)
    assert "holds a model" in err and "--overwrite" in err
    assert sorted(p.name for p in model.iterdir()) == ["config.json", "model.safetensors"]


@pytest.mark.slow
def test_sweep_writes_curves_results_and_the_plot(base, tmp_path, hub_offline):

    def sweep(overrides=(*TINY, "sim.max_episode_steps=8")) -> dict:
        return run_sweep(
            "flee",
            BASE,
            FRAMES,
            tmp_path,
            settings=("imagenet-encoder", "pointgoal-finetune"),
            plan=EvalPlan(episodes=2, num_envs=2, points=2),
            overrides=list(overrides),
            transfer_options={"planner_hidden_size": 64},
        )

    results = sweep()
    saved = json.loads((tmp_path / "sweep.json").read_text())
    assert saved == results and saved["metric"] == "flee_distance"
    skipped = saved["settings"]["imagenet-encoder"]
    assert skipped["status"] == "not run" and "ImageNet weights" in skipped["reason"]
    ran = saved["settings"]["pointgoal-finetune"]
    assert ran["status"] == "done" and ran["label"] == SETTINGS["pointgoal-finetune"].label
    assert [p["frames"] for p in ran["curve"]] == [0, FRAMES // 2, FRAMES]
    assert all(0 <= p["metric"] <= 1 for p in ran["curve"])
    assert ran["trainable_parameters"] < ran["total_parameters"]
    assert (tmp_path / "sweep-flee.png").stat().st_size > 10_000
    # Run again: finished settings are kept, nothing is retrained; the one that could not run is retried.
    before = (tmp_path / "pointgoal-finetune" / "log.jsonl").read_text()
    assert sweep()["settings"]["pointgoal-finetune"] == ran
    assert (tmp_path / "pointgoal-finetune" / "log.jsonl").read_text() == before
    # The same folder with other arguments would resume its runs under them: refused.
    with pytest.raises(ConfigError, match="holds a sweep with other overrides"):
        sweep(TINY)
    assert (tmp_path / "pointgoal-finetune" / "log.jsonl").read_text() == before


@pytest.mark.slow
def test_pushed_finetuned_model_card_names_its_base(base, tmp_path):
    """`navzoo push --dry-run` writes the repository folder (nothing leaves the machine)."""
    _finetune("pointgoal-finetune", "flee", tmp_path / "run", base, ["sim.max_episode_steps=8"])
    repo = tmp_path / "repo"
    _in_process("push", str(tmp_path / "run"), "me/flee", "--dry-run", "--episodes", "2", "--out", str(repo))
    from huggingface_hub import ModelCard

    card = ModelCard.load(repo / "README.md")
    # A zoo name is not a Hub repository, so the metadata leaves base_model out and the text names it.
    assert card.data.base_model is None
    assert f"Base model: `{BASE}`" in card.text and "transfer-learning" in card.data.tags
    assert f"navzoo finetune --task flee --setting pointgoal-finetune --from {BASE}" in card.text
    assert "flee" in card.data.tags
    assert card.data.eval_results[0].metric_type == "flee_distance"
    eval_json = json.loads((repo / "eval.json").read_text())
    assert eval_json["summary"]["flee_distance"] == pytest.approx(
        card.data.eval_results[0].metric_value, abs=1e-4
    )
    # A fine-tuning run is a training run: its config and learning curve go with it.
    assert (repo / "train_config.yaml").is_file() and (repo / "learning_curve.png").is_file()
    assert isinstance(ActorCritic.from_folder(repo), PointNavPolicy)
    assert not isinstance(ActorCritic.from_folder(repo), NeuralControllerPolicy)


def test_transfer_from_an_imitation_trained_base_trains_by_ddppo_from_that_base():
    """The shipped depth agent learnt by DAgger, then was kickstarted, in the stages of one run: its transfer
    run takes neither teacher nor stages (Flee and Explore have none; the base given is the starting
    point)."""
    base = navzoo.load("navzoo-pointnav-depth")
    (record,) = training_records(base.provenance)
    trained = record["train_config"]
    assert [trained["algorithm"], *(stage["algorithm"] for stage in trained["stages"])] == [
        "dagger",
        "dagger",
        "kickstart",
        "kickstart",
    ]
    config = transfer_train_config(base, "flee", FRAMES)
    assert (config.algorithm, config.stages, config.init_from) == ("ppo", (), None)
    assert config.sim.task == "flee"
    assert (config.ppo.lr, config.ppo.num_mini_batch) == (
        trained["ppo"]["lr"],
        trained["ppo"]["num_mini_batch"],
    )


def test_a_base_fine_tuned_by_a_later_run_transfers_with_the_first_run_s_hyper_parameters(tmp_path):
    """A base whose last run started from another model (here the shipped depth agent, kickstarted with
    warm-ups and a small decaying learning rate, as `navzoo train ... init_from=` records it) transfers with
    the PPO settings of the run that trained it from scratch."""
    shipped = navzoo.load("navzoo-pointnav-depth")
    first = shipped.provenance["train_config"]
    later = {**first, "algorithm": "kickstart", "stages": [], "init_from": "navzoo-pointnav-depth"}
    later["ppo"] = {**first["ppo"], "lr": 1e-4, "critic_warmup_updates": 10, "actor_warmup_updates": 10}
    shipped.save_pretrained(tmp_path / "kickstarted")
    config_file = tmp_path / "kickstarted" / "config.json"
    saved = json.loads(config_file.read_text())
    saved["provenance"] = {
        "source": "navzoo train",
        "train_config": later,
        "initialised_from": saved["provenance"],
    }
    config_file.write_text(json.dumps(saved))
    base = navzoo.load(tmp_path / "kickstarted")
    records = training_records(base.provenance)
    assert [r["train_config"]["algorithm"] for r in records] == ["kickstart", "dagger"]
    config = transfer_train_config(base, "flee", FRAMES)
    assert (config.ppo.lr, config.ppo.critic_warmup_updates) == (first["ppo"]["lr"], 0)
