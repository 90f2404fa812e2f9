"""Model cards for navzoo repositories on the Hugging Face Hub, written from the model's config.json and the
evaluation `navzoo eval` wrote for it.

The YAML header follows the Hub's model-card metadata (library_name, tags, license, base_model and a
model-index with one result per metric), so the Hub lists the model under its library, tags and results.
"""

from __future__ import annotations

import json
from typing import Any

import yaml
from huggingface_hub import EvalResult, ModelCard, ModelCardData

from navzoo.models import PolicyConfig

BASE_TAGS = ("navzoo", "reinforcement-learning", "embodied-ai", "navigation", "pointgoal")
TASK_NAME = "PointGoal navigation"
DATASET_TYPE = "navzoo-embedded-pointnav"  # navzoo's procedurally generated episodes, built in the package


def card_data(
    config: dict[str, Any],
    evaluation: dict[str, Any],
    *,
    license: str,
    base_model: str | None = None,
) -> ModelCardData:
    """The card's metadata: `config` is the parsed config.json, `evaluation` the entry `eval_results`
    returns (split, episodes, action mode and the summary)."""
    architecture = config["architecture"]
    sensors = list(_cameras(architecture)) or ["blind"]
    provenance = config.get("provenance") or {}
    tags = [*BASE_TAGS, *sensors]
    if provenance.get("source") == "navzoo train":
        tags.append("dd-ppo")
    elif provenance.get("original_file"):
        tags += ["dd-ppo", "habitat"]
    summary, split = evaluation["summary"], evaluation["split"]
    setting = {"episodes": summary["episodes"], "action_mode": evaluation["action_mode"]}
    results = [
        EvalResult(
            task_type="reinforcement-learning",
            task_name=TASK_NAME,
            dataset_type=DATASET_TYPE,
            dataset_name=f"navzoo embedded PointGoal ({split})",
            dataset_split=split,
            dataset_args=setting,
            metric_type=metric,
            metric_name=label,
            metric_value=round(float(summary[metric]), 4),
        )
        for metric, label in (("success", "Success"), ("spl", "SPL"))
    ]
    return ModelCardData(
        library_name="navzoo",
        pipeline_tag="reinforcement-learning",
        license=license,
        base_model=base_model or provenance.get("base_model"),
        tags=tags,
        model_name=config.get("name"),
        eval_results=results,
    )


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
    SPL-by-distance plot and the training run's learning curve.
    """
    data = card_data(config, evaluation, license=license, base_model=base_model)
    sections = [
        _summary(repo_id, config),
        _results(evaluation, video, figure),
        _provenance(config, data.base_model, learning_curve),
        _usage(repo_id),
    ]
    return ModelCard(f"---\n{data.to_yaml()}\n---\n\n" + "\n\n".join(sections) + "\n")


def _cameras(architecture: dict[str, Any]) -> tuple[str, ...]:
    return PolicyConfig.from_dict(architecture).visual_sensors


def _summary(repo_id: str, config: dict[str, Any]) -> str:
    arch = config["architecture"]
    sensors = _cameras(arch)
    seeing = f"{'+'.join(sensors)} at {arch['resolution'][0]}x{arch['resolution'][1]}" if sensors else "blind"
    encoder = arch.get("backbone") or "no visual encoder"
    memory = f"{arch['num_recurrent_layers']}-layer {arch['rnn_type']} with {arch['hidden_size']} units"
    return (
        f"# {config.get('name') or repo_id.rsplit('/', 1)[-1]}\n\n"
        f"A PointGoal navigation policy for [navzoo](https://pypi.org/project/navzoo/): given the goal's "
        f"position relative to the agent (GPS+Compass) and its own sensors, it chooses stop, move forward "
        f"0.25 m, turn left 10° or turn right 10°.\n\n"
        f"| | |\n|---|---|\n| Sensors | {seeing} + GPS+Compass |\n| Visual encoder | {encoder} |\n"
        f"| Memory | {memory} |\n| Actor-critic | habitat-baselines `PointNavResNetPolicy` parameter names |"
    )


def _results(evaluation: dict[str, Any], video: str | None, figure: str | None) -> str:
    summary = evaluation["summary"]

    def rate(name: str) -> str:
        ci = summary.get(f"{name}_ci95")
        return f"{summary[name]:.3f}" + (f" ± {ci:.3f}" if ci is not None else "")

    lines = [
        "## Evaluation",
        "",
        f"{summary['episodes']} episodes of the **{evaluation['split']}** split of navzoo's embedded "
        f"simulator, actions {evaluation['action_mode']} (`navzoo eval`; ± is a 95% confidence interval).",
        "",
        "| Split | Episodes | Success | SPL |",
        "|---|---|---|---|",
        f"| {evaluation['split']} | {summary['episodes']} | {rate('success')} | {rate('spl')} |",
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
        outcome = "reaches the goal" if episode.get("success") else "does not reach the goal"
        lines += [
            "",
            f"Episode {episode.get('episode_index', 0)} of {evaluation['split']}: the agent {outcome} "
            f"(SPL {episode.get('spl', 0.0):.2f}). Top-down map with the shortest path, the agent's view and "
            "its action, value estimate and reward at each step:",
            "",
            f'<video src="{video}" controls autoplay loop muted width="100%"></video>',
        ]
    return "\n".join(lines)


def _provenance(config: dict[str, Any], base_model: str | None, learning_curve: str | None) -> str:
    provenance = config.get("provenance") or {}
    lines = ["## Provenance", ""]
    if provenance.get("source") == "navzoo train":
        train_config = provenance.get("train_config", {})
        machine = provenance.get("machine") or {}
        lines += [
            f"Trained with `navzoo train` (DD-PPO) for {provenance.get('frames', 0):,} frames in "
            f"{provenance.get('updates', 0):,} updates on {provenance.get('workers', 1)} worker(s) in "
            f"{_duration(provenance.get('wall_time_s', 0))} on {_machine(machine)}.",
            "",
            "Reproduce with `navzoo train train_config.yaml --run-dir runs/<name>` (the file is in this "
            "repository).",
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
            + "; the tensors are unchanged."
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
        lines += ["", f"Base model: [{base_model}](https://huggingface.co/{base_model})."]
    return "\n".join(lines)


def _duration(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min"


def _machine(machine: dict[str, Any]) -> str:
    if not machine:
        return "an unrecorded machine"
    where = machine.get("gpu") or f"{machine.get('cpu_count', '?')} CPU cores"
    return f"{where} ({machine.get('platform', 'unknown platform')}, torch {machine.get('torch', '?')})"


def _usage(repo_id: str) -> str:
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
from navzoo.policy_agent import PolicyAgent, sim_settings
from navzoo.sim import BatchSim, SimConfig

policy = navzoo.load("hf-hub:{repo_id}")
sim = BatchSim(SimConfig(split="val", num_envs=8, **sim_settings(policy.config)))
agent = PolicyAgent(policy, num_envs=8)
obs, first = sim.reset(), torch.ones(8, dtype=torch.bool)
for _ in range(200):
    obs, reward, done, info = sim.step(agent.act(obs, first))  # 0 stop, 1 forward, 2 left, 3 right
    first = done
```"""
