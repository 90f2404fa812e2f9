"""`navzoo push`: publish a model or training-run folder as a Hugging Face Hub model repository.

The repository gets what a reader needs to trust the weights: config.json and model.safetensors, a model
card (README.md) generated from them and from an evaluation on the embedded simulator on the task the model
was trained for, that evaluation (eval.json, one replay file, and for PointGoal spl_by_distance.png), an
mp4 of that episode, and for training runs the train_config.yaml that reproduces them and the learning
curve. Everything is written to a local folder
first (kept with --out, or only written with --dry-run) and uploaded in one commit with huggingface_hub,
which finds the token where it always does (HF_TOKEN, `hf auth login`) unless --token is given.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import httpx2
import yaml
from huggingface_hub import CommitInfo, HfApi
from huggingface_hub.errors import HfHubHTTPError, HFValidationError
from huggingface_hub.utils import validate_repo_id

from navzoo.errors import NavzooError
from navzoo.evaluation import run
from navzoo.evaluation.replay import load_replay
from navzoo.evaluation.replay_view import ReplayView
from navzoo.evaluation.video import write_mp4
from navzoo.hub.card import TRAINED_BY, model_card
from navzoo.hub.deadline import DEFAULT_TIMEOUT_S, hub_deadline
from navzoo.hub.eval_report import EVAL_NAME, ModelEvaluation, read_model_evaluation
from navzoo.models import ActorCritic
from navzoo.models.hub_mixin import CARD_NAME, merge_repository_card
from navzoo.models.weights import CONFIG_NAME, WEIGHTS_NAME, read_config
from navzoo.tasks import get_task

FIGURE_NAME = "spl_by_distance.png"
VIDEO_NAME = "replay.mp4"
TRAIN_CONFIG_NAME = "train_config.yaml"
LEARNING_CURVE_NAME = "learning_curve.png"
VIDEO_FPS = 8
REPLAYS_SEARCHED = 5  # the video shows the first successful one of the first few (else the first)
MAX_FIGURE_BYTES = 16 << 20  # the plots navzoo draws take a few hundred KB


class HubError(NavzooError):
    """The Hub refused or failed an upload."""


def check_repo_id(repo_id: str) -> None:
    """HubError unless `repo_id` is a repository id the Hub takes (huggingface_hub's own rules)."""
    try:
        validate_repo_id(repo_id)
    except HFValidationError as err:
        raise HubError(
            f"{repo_id!r} is not a valid Hub repository id ({err}); use 'org/name': letters, digits, '-', "
            "'_' and '.', at most 96 characters, no '--' or '..'"
        ) from None


def write_repo_folder(
    folder: str | Path,
    out: str | Path,
    repo_id: str,
    *,
    split: str = "val",
    episodes: int = 100,
    mode: str = "sampled",
    eval_dir: str | Path | None = None,
    license: str = "mit",
    base_model: str | None = None,
    device: str = "cpu",
) -> Path:
    """Write everything `push` uploads into `out` and return it. The inputs (repository id, model folder,
    a given evaluation) are checked before anything is evaluated or written."""
    folder, out = Path(folder), Path(out)
    check_repo_id(repo_id)
    ActorCritic.from_folder(folder)
    model_config, config = read_config(folder)
    task = model_config.metadata.task
    given = None if eval_dir is None else read_model_evaluation(Path(eval_dir), folder, task)
    with tempfile.TemporaryDirectory(prefix="navzoo-eval-") as scratch:
        if given is None:
            evaluated = _evaluate(folder, Path(scratch), task, split, episodes, mode, device)
            given = read_model_evaluation(evaluated, folder, task)
        evaluation = _evaluation(given, task, out)
    for name in (CONFIG_NAME, WEIGHTS_NAME):
        shutil.copyfile(folder / name, out / name)
    (out / EVAL_NAME).write_text(json.dumps(evaluation, indent=2) + "\n")
    provenance = config.get("provenance") or {}
    train_config = provenance.get("train_config")
    if provenance.get("source") in TRAINED_BY and train_config:
        (out / TRAIN_CONFIG_NAME).write_text(yaml.safe_dump(train_config, sort_keys=False))
        if (folder / LEARNING_CURVE_NAME).is_file():
            _copy_figure(folder / LEARNING_CURVE_NAME, out / LEARNING_CURVE_NAME)
    card = model_card(
        repo_id,
        config,
        evaluation,
        license=license,
        base_model=base_model,
        video=VIDEO_NAME,
        figure=FIGURE_NAME if (out / FIGURE_NAME).is_file() else None,
        learning_curve=LEARNING_CURVE_NAME if (out / LEARNING_CURVE_NAME).is_file() else None,
    )
    card.save(out / CARD_NAME)
    return out


def _evaluate(folder: Path, out: Path, task: str, split: str, episodes: int, mode: str, device: str) -> Path:
    """Evaluate the model on `task` into `out`, saving the replays the video is chosen from."""
    replays = min(REPLAYS_SEARCHED, episodes)
    run(
        [str(folder)],
        task=task,
        split=split,
        episodes=episodes,
        mode=mode,
        out=out,
        replays=replays,
        device=device,
    )
    return out


def _evaluation(given: ModelEvaluation, task: str, out: Path) -> dict[str, Any]:
    """The model's entry of `navzoo eval`'s report on `task`, with the plot, a replay and its video copied
    to `out`."""
    entry, eval_dir = given.entry, given.path.parent
    replays = [(path, load_replay(path)) for path in given.replays]  # within load_replay's bounds
    out.mkdir(parents=True, exist_ok=True)
    if (eval_dir / FIGURE_NAME).is_file():
        _copy_figure(eval_dir / FIGURE_NAME, out / FIGURE_NAME)
    source, shown = next(((f, r) for f, r in replays if r.metrics.get("success")), replays[0])
    view = ReplayView(shown)
    write_mp4((view.frame(step) for step in range(shown.num_steps + 1)), out / VIDEO_NAME, VIDEO_FPS)
    replay_name = source.name
    shutil.copyfile(source, out / replay_name)
    return {
        "split": given.split,
        "task": task,
        "action_mode": entry["action_mode"],
        "sim": entry["sim"],
        "summary": entry["summary"],
        "video_episode": {"episode_index": shown.episode_index, "replay": replay_name, **shown.metrics},
        "episodes": entry["episodes"],
    }


def _copy_figure(source: Path, target: Path) -> None:
    size = source.stat().st_size
    if size > MAX_FIGURE_BYTES:
        raise NavzooError(
            f"{source} is {size:,} bytes, more than the {MAX_FIGURE_BYTES >> 20} MiB a navzoo plot takes: "
            "remove it (push leaves it out) or draw it again"
        )
    shutil.copyfile(source, target)


def upload(
    folder: Path,
    repo_id: str,
    *,
    private: bool = False,
    revision: str | None = None,
    create_pr: bool = False,
    token: str | None = None,
    commit_message: str = "Upload navzoo model",
    timeout: float = DEFAULT_TIMEOUT_S,
) -> CommitInfo:
    """Create the repository (and branch) if needed and upload `folder` as one commit. The folder's card
    is first merged into the one the repository has (navzoo.models.hub_mixin.merge_card), so text and
    metadata a person added there survive. A request that makes no progress for `timeout` seconds fails."""
    check_repo_id(repo_id)
    api = HfApi(token=token, library_name="navzoo")
    try:
        with hub_deadline(timeout):
            return _upload(api, folder, repo_id, private, revision, create_pr, commit_message)
    except httpx2.TimeoutException:
        raise HubError(
            f"uploading to {repo_id} failed: the Hub at {api.endpoint} did not answer within {timeout:g} s; "
            "check your connection (and HF_ENDPOINT), or give it longer with --timeout"
        ) from None
    except httpx2.TransportError as err:
        raise HubError(
            f"uploading to {repo_id} failed: the Hub at {api.endpoint} could not be reached ({err}); check "
            "your connection (and HF_ENDPOINT), then push again"
        ) from None
    except HfHubHTTPError as err:
        hint = "check the repository id and your connection, then push again"
        if err.response is not None:  # an error raised before any answer carries none
            hint = {
                401: "log in with `hf auth login`, set HF_TOKEN, or pass --token",
                403: "the token cannot write here: use a write token of a member of the organisation",
            }.get(err.response.status_code, hint)
        raise HubError(f"uploading to {repo_id} failed ({err}); {hint}") from None


def _upload(
    api: HfApi,
    folder: Path,
    repo_id: str,
    private: bool,
    revision: str | None,
    create_pr: bool,
    commit_message: str,
) -> CommitInfo:
    # not private: the organisation's default visibility, as huggingface_hub does
    api.create_repo(repo_id, private=private or None, exist_ok=True)
    if revision and not create_pr:
        api.create_branch(repo_id, branch=revision, exist_ok=True)
    merge_repository_card(api, folder, repo_id, None if create_pr else revision)
    return api.upload_folder(
        repo_id=repo_id,
        folder_path=folder,
        revision=revision,
        create_pr=create_pr,
        commit_message=commit_message,
    )


def _commit_message(folder: Path) -> str:
    evaluation = json.loads((folder / EVAL_NAME).read_text())
    summary = evaluation["summary"]
    metrics = get_task(evaluation.get("task", "pointnav")).metrics
    results = ", ".join(f"{label} {summary[key]:.3f}" for key, label in metrics)
    return f"navzoo push: {evaluation['split']} {results} ({summary['episodes']} episodes)"
