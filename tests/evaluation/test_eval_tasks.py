"""Evaluation on Flee and Explore: `evaluate` + `summarize` with goal-less policies and baselines, the task
checks of models and baselines, `navzoo eval --task`, and the Hub card of a transferred model."""

import json

import numpy as np
import pytest
import torch
from huggingface_hub import ModelCard

from navzoo.agents.baselines import make_baseline
from navzoo.agents.policy_agent import PolicyAgent, check_sim_config, sim_settings
from navzoo.cli.main import main
from navzoo.errors import ConfigError, NavzooError
from navzoo.evaluation import episode_map, evaluate, format_table, summarize
from navzoo.evaluation.replay import load_replay
from navzoo.evaluation.topdown import GOAL, SHORTEST_PATH
from navzoo.hub.push import write_repo_folder
from navzoo.models import ModelMetadata, PointNavPolicy, PolicyConfig
from navzoo.models.weights import save_pretrained
from navzoo.sim import BatchSim, SimConfig
from navzoo.tasks import TASKS, get_task

RESOLUTION = (32, 32)
EPISODES = 4
STEP_LIMIT = 40  # baselines never stop on Flee / Explore: keep their episodes short
BASE_MODEL = "someone/pointnav-depth"
# A tiny SE-ResNet9 without the GPS+Compass, as transfer builds them (there with 64x64 RGB).
GOALLESS = PolicyConfig(
    backbone="se_resnet9",
    sensors=("depth",),
    resolution=RESOLUTION,
    hidden_size=32,
    rnn_type="GRU",
    num_recurrent_layers=1,
    base_planes=16,
)

pytestmark = pytest.mark.usefixtures("one_thread")


def goalless_policy(task: str, seed: int = 0) -> PointNavPolicy:
    torch.manual_seed(seed)
    return PointNavPolicy(GOALLESS.replace(metadata=ModelMetadata(task=task))).eval()


def task_sim(task: str, **changes) -> BatchSim:
    config = SimConfig(
        task=task,
        split="val",
        num_envs=2,
        scene_families=("apartment-s",),
        max_episode_steps=STEP_LIMIT,
        **sim_settings(GOALLESS),
    )
    return BatchSim(config.replace(**changes))


@pytest.fixture(scope="module")
def model_folders(tmp_path_factory):
    """A saved Flee model fine-tuned from a PointGoal one, and a saved Explore model."""
    root = tmp_path_factory.mktemp("transfer")
    provenance = {"source": "navzoo finetune", "base_model": BASE_MODEL}
    return {
        task: save_pretrained(goalless_policy(task), root / f"tiny-{task}", provenance=provenance)
        for task in ("flee", "explore")
    }


@pytest.mark.parametrize("task", ["flee", "explore"])
def test_a_goalless_policy_is_evaluated_on_its_task(task):
    metric = get_task(task).primary_metric
    sim = task_sim(task)
    try:
        results = evaluate(sim, PolicyAgent(goalless_policy(task), sim.num_envs), EPISODES, progress=False)
        image = episode_map(sim, results[0])
    finally:
        sim.close()
    assert [r.episode_index for r in results] == list(range(EPISODES))
    for r in results:
        assert r.task == task and r.values.shape == (r.num_steps,)
        assert set(r.metrics()) >= {metric, "path_length", "collisions", "num_steps", "episode_return"}
        assert not {"spl", "success", "distance_to_goal", "geodesic_distance", "task"} & set(r.metrics())
    values = [getattr(r, metric) for r in results]
    if task == "flee":
        assert all(0 <= v <= 1 for v in values) and results[0].visited_cells is None
    else:
        assert all(isinstance(v, int) and v >= 1 for v in values) and results[0].flee_distance is None

    summary = summarize(results)
    assert summary[metric] == pytest.approx(np.mean(values)) and summary[f"{metric}_ci95"] >= 0
    assert summary["episodes"] == EPISODES and "spl" not in summary and "by_distance" not in summary
    assert summary["num_steps"] == pytest.approx(np.mean([r.num_steps for r in results]))
    table = format_table({"tiny": summary}, task)
    assert metric.replace("_", " ") in table.splitlines()[0] and "SPL" not in table
    # no goal on these tasks: the map draws no goal and no shortest path
    assert not any((np.abs(image.astype(int) - c).sum(-1) < 10).any() for c in (GOAL, SHORTEST_PATH))


@pytest.mark.parametrize("task", ["flee", "explore"])
def test_forward_only_runs_every_episode_to_the_step_limit(task):
    sim = task_sim(task, sensors=())
    try:
        results = evaluate(sim, make_baseline("forward-only", sim), EPISODES, progress=False)
    finally:
        sim.close()
    assert all(r.num_steps == STEP_LIMIT and r.values is None for r in results)
    summary = summarize(results)
    assert summary[get_task(task).primary_metric] > 0 and summary["path_length"] > 0


def test_task_metrics_and_primary_metric():
    assert {name: task.primary_metric for name, task in TASKS.items()} == {
        "pointnav": "spl",
        "flee": "flee_distance",
        "explore": "visited_cells",
    }
    with pytest.raises(ConfigError, match="'pointnav', 'flee', 'explore'"):
        get_task("objectnav")


def test_a_policy_runs_only_on_its_own_task():
    flee_sim = SimConfig(task="flee", split="val", **sim_settings(GOALLESS))
    with pytest.raises(ConfigError, match=r"PointGoal policy; evaluate it on task 'pointnav'"):
        check_sim_config(GOALLESS, flee_sim, "model 'x'")
    check_sim_config(GOALLESS, flee_sim, "model 'x'", "flee")
    with pytest.raises(ConfigError, match=r"model 'x' is a Flee policy; evaluate it on task 'flee'"):
        check_sim_config(GOALLESS, flee_sim.replace(task="pointnav"), "model 'x'", "flee")


def test_goal_steering_baselines_are_refused_without_a_goal():
    sim = task_sim("explore", sensors=())
    try:
        for name in ("goal-follower", "oracle"):
            with pytest.raises(ConfigError, match=rf"for the {name} baseline.*random or forward-only"):
                make_baseline(name, sim)
        assert make_baseline("random", sim).name == "random"
    finally:
        sim.close()


def eval_argv(*words, out) -> list[str]:
    """`navzoo eval WORDS...` (agents and options) on two episodes of the small apartments."""
    fixed = ["--episodes", "2", "--num-envs", "2", "--threads", "1", "--scene-families", "apartment-s"]
    return ["eval", *map(str, words), *fixed, "--replays", "1", "--out", str(out)]


def test_eval_command_on_flee(model_folders, tmp_path, capsys):
    out = tmp_path / "eval"
    assert main(eval_argv(model_folders["flee"], "random", "--task", "flee", out=out)) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("Flee, split val") and "flee distance" in printed and "SPL" not in printed

    report = json.loads((out / "eval.json").read_text())
    assert report["config"]["task"] == "flee" and report["config"]["threads"] == 1
    entry = report["agents"]["tiny-flee"]
    assert entry["model"]["task"] == "flee" and entry["sim"]["resolution"] == list(RESOLUTION)
    assert set(entry["summary"]) >= {"flee_distance", "flee_distance_ci95", "path_length"}
    assert all("flee_distance" in e and "spl" not in e for e in entry["episodes"])
    assert report["agents"]["random"]["summary"]["num_steps"] == 500  # no goal: it never stops
    assert (out / "map-tiny-flee.png").is_file() and not (out / "spl_by_distance.png").exists()
    replay = load_replay(out / entry["replays"][0])
    assert replay.sim_config.task == "flee" and replay.metrics == entry["episodes"][0]


def test_eval_task_defaults_to_the_first_models(model_folders, tmp_path, capsys):
    assert main(eval_argv(model_folders["explore"], out=tmp_path / "eval")) == 0
    assert capsys.readouterr().out.startswith("Explore, split val")


@pytest.mark.parametrize(
    ("agents", "message"),
    [
        (
            ["goal-follower", "--task", "flee"],
            "for the goal-follower baseline, which steers by the point goal",
        ),
        (
            ["FLEE", "--task", "explore"],
            "is a Flee policy; evaluate it on task 'flee', or leave the task unset and name this model first "
            "(the --task option)",
        ),
        (["FLEE", "--threads", "-1"], "invalid threads=-1: allowed values are 0 (automatic) or a positive"),
    ],
)
def test_eval_command_refuses_what_cannot_run(model_folders, tmp_path, capsys, agents, message):
    agents = [str(model_folders["flee"]) if a == "FLEE" else a for a in agents]
    assert main(["eval", *agents, "--episodes", "2", "--out", str(tmp_path / "eval")]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("task", ["flee", "explore"])
def test_card_of_a_transferred_model_reports_its_task(model_folders, tmp_path, task):
    out = write_repo_folder(model_folders[task], tmp_path / "repo", "someone/tiny", split="val", episodes=2)
    evaluation = json.loads((out / "eval.json").read_text())
    assert evaluation["task"] == task and "spl" not in evaluation["summary"]
    assert {"replay.mp4", "README.md"} <= {p.name for p in out.iterdir()}
    assert not (out / "spl_by_distance.png").exists()

    card = ModelCard.load(out / "README.md")
    metric, name = {
        "flee": ("flee_distance", "Flee distance (D_T)"),
        "explore": ("visited_cells", "Visited cells"),
    }[task]
    (result,) = card.data.eval_results
    assert (result.metric_type, result.metric_name) == (metric, name)
    assert result.metric_value == pytest.approx(evaluation["summary"][metric], abs=1e-4)
    assert result.dataset_type == f"navzoo-embedded-{task}" and result.task_name == task.capitalize()
    assert {task, "transfer-learning", "depth"} <= set(card.data.tags) and "pointgoal" not in card.data.tags
    assert card.data.base_model == BASE_MODEL and f"huggingface.co/{BASE_MODEL}" in card.text
    assert name in card.text and "GPS+Compass |" not in card.text and f'task="{task}"' in card.text


def test_push_refuses_an_evaluation_of_another_task(model_folders, tmp_path):
    out = tmp_path / "eval"
    assert main(eval_argv(model_folders["explore"], out=out)) == 0
    with pytest.raises(NavzooError, match=r"on explore, but it was trained for flee.*evaluate it on flee"):
        write_repo_folder(model_folders["flee"], tmp_path / "repo", "someone/tiny", eval_dir=out)


def test_success_interval_is_wilsons_and_never_empty():
    from navzoo.evaluation import format_estimate, wilson_interval

    # Reference values of the 95% Wilson score interval (Agresti & Coull 1998, Table 1 style).
    assert wilson_interval(0, 10) == pytest.approx([0.0, 0.2775], abs=1e-4)
    assert wilson_interval(10, 10) == pytest.approx([0.7225, 1.0], abs=1e-4)
    assert wilson_interval(5, 10) == pytest.approx([0.2366, 0.7634], abs=1e-4)
    summary = {"success": 1.0, "success_ci95": wilson_interval(300, 300)}
    assert format_estimate(summary, "success") == "1.000 [0.987, 1.000]"
