"""Model cards for navzoo repositories on the Hugging Face Hub, written from the model's config.json and the
evaluation `navzoo eval` wrote for it, on the task the model was trained for (PointGoal, Flee or Explore).

The YAML header follows the Hub's model-card metadata (library_name, tags, license, base_model and a
model-index with one result per metric), so the Hub lists the model under its library, tags and results.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from huggingface_hub import EvalResult, ModelCard, ModelCardData

from navzoo.errors import NavzooError
from navzoo.evaluation import format_estimate
from navzoo.models import NeuralControllerConfig, config_from_dict
from navzoo.models.hub_mixin import CARD_BEGIN, CARD_END
from navzoo.models.metadata import training_records
from navzoo.sim.config import SimConfig
from navzoo.tasks import CardText, get_task
from navzoo.zoo.habitat_checkpoints import habitat_override_lines, habitat_policy

TRAINED_BY = ("navzoo train", "navzoo finetune")  # provenance sources that carry a training record
BASE_TAGS = ("navzoo", "reinforcement-learning", "embodied-ai", "navigation")


def card_data(
    config: dict[str, Any],
    evaluation: dict[str, Any],
    *,
    license: str,
    base_model: str | None = None,
    name: str | None = None,
) -> ModelCardData:
    """The card's metadata: `config` is the parsed config.json, `evaluation` the entry `eval_results`
    returns (split, task, episodes, action mode and the summary). `name` stands in for a config.json
    without one (the Hub needs a model name next to results)."""
    task_id = _task_id(evaluation)
    task = get_task(task_id)
    sensors = list(config_from_dict(config["architecture"]).visual_sensors) or ["blind"]
    provenance = config.get("provenance") or {}
    tags = [*BASE_TAGS, task.card.tag, *sensors]
    if provenance.get("source") in TRAINED_BY:
        tags.append("dd-ppo")
    elif provenance.get("original_file"):
        tags += ["dd-ppo", "habitat"]
    if provenance.get("base_model"):
        tags.append("transfer-learning")
    summary, split = evaluation["summary"], evaluation["split"]
    setting = {"episodes": summary["episodes"], "action_mode": evaluation["action_mode"]}
    results = [
        EvalResult(
            task_type="reinforcement-learning",
            task_name=task.card.task_name,
            dataset_type=f"navzoo-embedded-{task_id}",
            dataset_name=f"navzoo embedded {task.card.dataset} ({split})",
            dataset_split=split,
            dataset_args=setting,
            metric_type=metric,
            metric_name=label,
            metric_value=round(float(summary[metric]), 4),
        )
        for metric, label in task.metrics
    ]
    return ModelCardData(
        library_name="navzoo",
        pipeline_tag="reinforcement-learning",
        license=license,
        base_model=base_model or hub_repo_id(provenance.get("base_model")),
        tags=tags,
        model_name=config.get("name") or name,
        eval_results=results,
    )


def _task_id(evaluation: dict[str, Any]) -> str:
    """The evaluated task; evaluations written before Flee and Explore were PointGoal."""
    return evaluation.get("task", "pointnav")


def model_card(
    repo_id: str,
    config: dict[str, Any],
    evaluation: dict[str, Any],
    *,
    license: str,
    base_model: str | None = None,
    video: str | None = None,
    figure: str | None = None,
    learning_curve: str | None = None,
) -> ModelCard:
    """The whole card: metadata, what the model is, its results, where it came from and how to use it.

    `video`, `figure` and `learning_curve` are file names in the repository: the replay mp4, the
    SPL-by-distance plot (PointGoal only) and the training run's learning curve.
    """
    name = repo_id.rsplit("/", 1)[-1]
    data = card_data(config, evaluation, license=license, base_model=base_model, name=name)
    sections = [
        _summary(repo_id, config, get_task(_task_id(evaluation)).card),
        _results(evaluation, video, figure),
        _provenance(config, base_model or config.get("provenance", {}).get("base_model"), learning_curve),
        _usage(repo_id, _task_id(evaluation)),
        _habitat_usage(repo_id, config_from_dict(config["architecture"])),
    ]
    body = "\n\n".join(section for section in sections if section)
    # The generated part sits between these lines; a re-push replaces it and keeps the text around it.
    return ModelCard(f"---\n{data.to_yaml()}\n---\n\n{CARD_BEGIN}\n{body}\n{CARD_END}\n")


def _summary(name: str, config: dict[str, Any], task: CardText) -> str:
    model = config_from_dict(config["architecture"])
    if model.resolution is None:  # no camera
        seeing = "blind"
    else:
        height, width = model.resolution
        seeing = f"{'+'.join(model.visual_sensors)} at {height}x{width}"
    if model.has_goal:
        seeing += " + GPS+Compass"
    memory = f"{model.num_recurrent_layers}-layer {model.rnn_type} with {model.hidden_size} units"
    if isinstance(model, NeuralControllerConfig):
        structure = "DD-PPO neural controller: a planner steering a frozen PointGoal policy through its goal"
    elif exported := _habitat_policy(model):
        structure = f"habitat-baselines `{exported}`"
    else:
        names = "PointNavBaselinePolicy" if model.net == "baseline" else "PointNavResNetPolicy"
        structure = f"habitat-baselines `{names}` parameter names around a navzoo encoder or goal input"
    encoder = model.backbone or "no visual encoder"
    return (
        f"# {name}\n\n{task.purpose}\n\n"
        f"| | |\n|---|---|\n| Sensors | {seeing} |\n| Visual encoder | {encoder} |\n"
        f"| Memory | {memory} |\n| Actor-critic | {structure} |"
    )


def _results(evaluation: dict[str, Any], video: str | None, figure: str | None) -> str:
    summary, task = evaluation["summary"], get_task(_task_id(evaluation))
    on_task = "" if task.has_goal else f" on {task.card.task_name}"

    names = [label for _, label in task.metrics]
    lines = [
        "## Evaluation",
        "",
        f"{summary['episodes']} episodes of the **{evaluation['split']}** split of navzoo's embedded "
        f"simulator{on_task}, actions {evaluation['action_mode']} (`navzoo eval`; 95% confidence intervals: "
        "± for means, [low, high] Wilson intervals for success rates).",
        "",
        "| Split | Episodes | " + " | ".join(names) + " |",
        "|---" * (2 + len(names)) + "|",
        f"| {evaluation['split']} | {summary['episodes']} | "
        + " | ".join(format_estimate(summary, metric).replace("±", "± ") for metric, _ in task.metrics)
        + " |",
    ]
    if summary.get("by_distance"):
        lines += ["", "By geodesic distance to the goal (DD-PPO Fig. 13):", ""]
        lines += ["| Distance (m) | Episodes | Success | SPL |", "|---|---|---|---|"]
        for row in summary["by_distance"]:
            hi = "∞" if row["max_geodesic"] is None else f"{row['max_geodesic']:g}"
            rates = f"{row['episodes']} | {row['success']:.3f} | {row['spl']:.3f}"
            lines.append(f"| {row['min_geodesic']:g}–{hi} | {rates} |")
    if figure:
        lines += ["", f"![SPL by geodesic distance]({figure})"]
    if video:
        episode = evaluation.get("video_episode", {})
        lines += [
            "",
            f"Episode {episode.get('episode_index', 0)} of {evaluation['split']}: "
            f"{task.outcome(episode)}. Top-down map with {task.card.map_shows}, the agent's view and its "
            "action, value estimate and reward at each step:",
            "",
            f'<video src="{video}" controls autoplay loop muted width="100%"></video>',
        ]
    return "\n".join(lines)


def _provenance(config: dict[str, Any], base_model: str | None, learning_curve: str | None) -> str:
    provenance = config.get("provenance") or {}
    lines = ["## Provenance", ""]
    if provenance.get("source") in TRAINED_BY:
        train_config = provenance.get("train_config", {})
        machine = provenance.get("machine") or {}
        command = provenance["source"]
        lines += [
            f"Trained with `{command}` by {_stages(provenance)}, on {provenance.get('workers', 1)} worker(s) "
            f"of {_machine(machine)}.",
            "",
            _reproduce(provenance),
            "",
            "<details><summary>Training config</summary>",
            "",
            "```yaml",
            yaml.safe_dump(train_config, sort_keys=False).rstrip(),
            "```",
            "",
            "</details>",
        ]
        if learning_curve:
            lines += ["", f"![Learning curve]({learning_curve})"]
    elif provenance.get("original_file"):
        lines.append(
            f"Converted with `navzoo convert` from the habitat-baselines checkpoint "
            f"`{provenance['original_file']}`"
            + (f" ({provenance['original_url']})" if provenance.get("original_url") else "")
            + "; the tensors are unchanged but for the goal's weights on the bearing phi, negated for"
            " navzoo's sign of it (positive to the agent's right, habitat-lab's to its left)."
        )
        if provenance.get("paper"):
            lines += ["", f"Paper: [{provenance['paper']}]({provenance.get('paper_url', '')})."]
        if provenance.get("val_spl") is not None:
            lines += [
                "",
                "Reported by the authors on Habitat Challenge 2019 PointGoal: "
                f"val SPL {provenance['val_spl']}, success {provenance.get('val_success')} "
                f"({provenance.get('results_source', 'paper')}).",
            ]
    else:
        lines.append("No training record came with these weights. Their config.json provenance:")
        lines += ["", "```json", json.dumps(provenance, indent=2), "```"]
    if base_model:
        repo = hub_repo_id(base_model)
        shown = f"[{repo}](https://huggingface.co/{repo})" if repo else f"`{base_model}` (navzoo model zoo)"
        lines += ["", f"Base model: {shown}."]
    return "\n".join(lines)


ALGORITHMS = {
    "ppo": "DD-PPO",
    "dagger": "imitation of the {teacher} teacher (DAgger)",
    "kickstart": "DD-PPO kickstarted by the {teacher} teacher",
}


def _algorithm(name: str, teacher: str) -> str:
    """A stage's algorithm in the card's words (an unknown one by its name)."""
    return ALGORITHMS.get(name, name).format(teacher=teacher)


def _stages(provenance: dict[str, Any]) -> str:
    """The training recipe stage by stage, earliest first: an imitation run fine-tuned by DD-PPO (in the same
    run, or by another started from it with init_from) reads "imitation of the map-planner teacher ... for
    5,000,000 frames (1.4 h), then DD-PPO for 1,000,000 frames (17 min)". A run that added an input to the
    policy it started from (the seen_map) says so where it begins."""
    runs = []
    for record in training_records(provenance):
        config = record.get("train_config") or {}
        algorithm = record.get("algorithm") or config.get("algorithm", "ppo")
        # A record that names no teacher used the default one, the shortest path.
        imitation = config.get("imitation") or {}
        teacher = record.get("teacher") or imitation.get("teacher") or "shortest-path"
        if teacher == "policy" and imitation.get("teacher_model"):
            teacher = f"`{imitation['teacher_model']}` policy"
        stages = record.get("stages") or [{**record, "algorithm": algorithm}]
        added = (record.get("initialised_from") or {}).get("added_inputs") or []
        runs.append([(stage, teacher, added if i == 0 else []) for i, stage in enumerate(stages)])
    stages = [stage for run in reversed(runs) for stage in run]
    return ", then ".join(
        ("with the " + " and ".join(added) + " sensor added as an input, " if added else "")
        + f"{_algorithm(s['algorithm'], teacher)} for "
        f"{s.get('frames') or 0:,} frames ({_duration(s.get('wall_time_s') or 0)})"
        for s, teacher, added in stages
    )


def _reproduce(provenance: dict[str, Any]) -> str:
    transfer = provenance.get("transfer")
    if provenance["source"] == "navzoo finetune" and transfer:
        return (
            f"Transferred from `{transfer['base']}` to {transfer['task'].capitalize()} under the "
            f"`{transfer['setting']}` setting (DD-PPO section 6). Reproduce with `navzoo finetune --task "
            f"{transfer['task']} --setting {transfer['setting']} --from {transfer['base']} --frames "
            f"{provenance.get('frames', 0)}` (its training config is below)."
        )
    # A run's environments and rank overrides are per worker, so it reproduces with as many workers.
    workers = provenance.get("workers", 1)
    launcher = f"torchrun --standalone --nproc-per-node {workers} -m navzoo" if workers > 1 else "navzoo"
    return (
        f"Reproduce with `{launcher} train train_config.yaml --run-dir runs/<name>` (the file is in this "
        "repository)."
    )


def hub_repo_id(model: str | None) -> str | None:
    """The Hub repository a recorded base model names ("hf-hub:org/name[@rev]", as navzoo.load takes it,
    or "org/name"), or None for a zoo name or a local folder, which the Hub cannot link."""
    if not model:
        return None
    if model.startswith("hf-hub:"):
        return model.removeprefix("hf-hub:").partition("@")[0]
    looks_like_repo = model.count("/") == 1 and not model.startswith((".", "/", "~"))
    return model if looks_like_repo and not Path(model).exists() else None


def _duration(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min"


def _machine(machine: dict[str, Any]) -> str:
    if not machine:
        return "an unrecorded machine"
    where = machine.get("gpu") or f"{machine.get('cpu_count', '?')} CPU cores"
    return f"{where} ({machine.get('platform', 'unknown platform')}, torch {machine.get('torch', '?')})"


def _usage(repo_id: str, task_id: str) -> str:
    # The simulator runs the model's task: named unless it is SimConfig's default.
    task = "" if task_id == SimConfig().task else f'task="{task_id}", '
    return f"""## Usage

```bash
pip install navzoo
navzoo pull {repo_id}    # into the Hugging Face cache; navzoo.load reads it from there
navzoo eval hf-hub:{repo_id} --split val
navzoo demo    # watch it navigate
```

```python
import torch

import navzoo
from navzoo.agents.policy_agent import PolicyAgent, sim_settings
from navzoo.sim import BatchSim, SimConfig

policy = navzoo.load("hf-hub:{repo_id}")
sim = BatchSim(SimConfig({task}split="val", num_envs=8, **sim_settings(policy.config)))
agent = PolicyAgent(policy, num_envs=8)
obs, first = sim.reset(), torch.ones(8, dtype=torch.bool)
for _ in range(200):
    obs, reward, done, info = sim.step(agent.act(obs, first))  # 0 stop, 1 forward, 2 left, 3 right
    first = done
```"""


def _habitat_policy(model: Any) -> str | None:
    """The habitat-baselines policy class the model exports to (`navzoo convert --to habitat`), if any."""
    if isinstance(model, NeuralControllerConfig):
        return None
    try:
        return habitat_policy(model)
    except NavzooError:
        return None


def _habitat_usage(repo_id: str, model: Any) -> str:
    policy = _habitat_policy(model)
    if policy is None:
        return ""
    overrides = habitat_override_lines(model)
    return f"""## Use in habitat-lab

The weights are habitat-baselines' `{policy}`: export them as a habitat-baselines checkpoint and evaluate
them with habitat-baselines' PointNav config and these overrides.

```bash
navzoo convert hf-hub:{repo_id} model.pth --to habitat
python -m habitat_baselines.run --config-name=pointnav/ppo_pointnav.yaml \\
    habitat_baselines.evaluate=True habitat_baselines.eval_ckpt_path_dir=model.pth \\
    {overrides}
```"""
