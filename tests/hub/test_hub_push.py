"""`navzoo push` and `navzoo pull` without a network.

The repository folder and its model card are written for real from a real (tiny) training run and a real
evaluation. The upload runs huggingface_hub's own HfApi code end to end against the fake Hub of
tests/fake_hub.py (the `fake_hub` fixture), the one mock here, which keeps every byte it received.
Pulling runs in a fresh interpreter with HF_HUB_OFFLINE=1 against a cache laid out in a temporary folder.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import av
import pytest
import torch
import yaml
from huggingface_hub import ModelCard

import navzoo
from navzoo.cli.main import main as cli_main
from navzoo.errors import NavzooError, UnknownModelError
from navzoo.hub.pull import pull
from navzoo.hub.push import HubError, upload, write_repo_folder
from navzoo.models.hub_mixin import CARD_BEGIN as BEGIN
from navzoo.models.hub_mixin import CARD_END as END
from navzoo.models.weights import CONFIG_NAME, WEIGHTS_NAME, save_pretrained
from navzoo.train.config import load_config
from navzoo.train.trainer import train
from tests.hub.fake_hub import TOKEN
from tests.support import put_in_hf_cache

REPO = "someone/blind-navigator"
EPISODES = 6

TINY_RUN = [
    "sim.num_envs=8",
    "sim.scene_families=[apartment-s]",
    "ppo.num_steps=16",
    "policy.hidden_size=32",
    "policy.num_recurrent_layers=1",
    "policy.rnn_type=GRU",
    "total_frames=256",
    "torch_threads=1",
]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A real `navzoo train` run folder (two updates of a tiny blind agent)."""
    run = tmp_path_factory.mktemp("runs") / "tiny-blind"
    threads = torch.get_num_threads()
    try:
        train(load_config("pointnav-blind", TINY_RUN), run)
    finally:
        torch.set_num_threads(threads)
    return run


@pytest.fixture(scope="module")
def repo_folder(run_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("push") / "repo"
    return write_repo_folder(run_dir, out, REPO, split="val", episodes=EPISODES, mode="deterministic")


def test_repo_folder_holds_weights_card_eval_video_and_training_record(run_dir, repo_folder):
    names = {p.name for p in repo_folder.iterdir()}
    assert {CONFIG_NAME, WEIGHTS_NAME, "README.md", "eval.json", "replay.mp4", "spl_by_distance.png"} <= names
    assert {"train_config.yaml", "learning_curve.png"} <= names
    assert (repo_folder / WEIGHTS_NAME).read_bytes() == (run_dir / WEIGHTS_NAME).read_bytes()
    provenance = json.loads((run_dir / CONFIG_NAME).read_text())["provenance"]
    assert yaml.safe_load((repo_folder / "train_config.yaml").read_text()) == provenance["train_config"]
    evaluation = json.loads((repo_folder / "eval.json").read_text())
    assert evaluation["split"] == "val" and evaluation["action_mode"] == "deterministic"
    assert evaluation["summary"]["episodes"] == len(evaluation["episodes"]) == EPISODES
    assert (repo_folder / evaluation["video_episode"]["replay"]).is_file()
    # the folder loads like any model folder
    assert navzoo.load(repo_folder).config == navzoo.load(run_dir).config


def test_card_metadata_parses_and_model_index_equals_the_evaluation(repo_folder):
    card = ModelCard.load(repo_folder / "README.md")
    evaluation = json.loads((repo_folder / "eval.json").read_text())
    data = card.data
    assert data.library_name == "navzoo" and data.license == "mit"
    assert {"reinforcement-learning", "embodied-ai", "navigation", "pointgoal", "blind"} <= set(data.tags)
    assert data.base_model is None  # trained from scratch
    results = {r.metric_type: r for r in data.eval_results}
    assert set(results) == {"success", "spl"}
    for metric, result in results.items():
        assert result.metric_value == pytest.approx(evaluation["summary"][metric], abs=1e-4)
        assert result.dataset_split == "val"
        assert result.dataset_args == {"episodes": EPISODES, "action_mode": "deterministic"}
    text = card.text
    assert "navzoo train" in text and f"{evaluation['summary']['episodes']} episodes" in text
    assert f'navzoo.load("hf-hub:{REPO}")' in text and 'src="replay.mp4"' in text


def test_replay_video_is_browser_playable_h264_of_the_whole_episode(repo_folder):
    evaluation = json.loads((repo_folder / "eval.json").read_text())
    steps = evaluation["video_episode"]["num_steps"]
    with av.open(str(repo_folder / "replay.mp4")) as container:
        stream = container.streams.video[0]
        assert stream.codec_context.name == "h264"
        assert stream.codec_context.pix_fmt == "yuv420p"  # what browsers decode
        frames = [frame.to_ndarray(format="rgb24") for frame in container.decode(stream)]
    assert len(frames) == steps + 1  # the start pose and one frame per action
    assert frames[0].shape[0] % 2 == 0 and frames[0].shape[1] % 2 == 0
    assert frames[0].std() > 10  # a picture, not a blank frame
    head = (repo_folder / "replay.mp4").read_bytes()[:64]
    assert head.find(b"moov") != -1 or head.find(b"ftyp") != -1


def test_converted_weights_name_their_origin_and_base_model(tmp_path, repo_folder):
    policy = navzoo.create_model("pointnav-blind", hidden_size=16, num_recurrent_layers=1, rnn_type="GRU")
    provenance = {"original_file": "blind.pth", "converted_from": "habitat-baselines checkpoint"}
    folder = save_pretrained(policy, tmp_path / "converted", name="converted", provenance=provenance)
    out = write_repo_folder(
        folder, tmp_path / "repo", "someone/converted", eval_dir=_eval_dir(folder, tmp_path), base_model=REPO
    )
    card = ModelCard.load(out / "README.md")
    assert card.data.base_model == REPO
    assert "habitat" in card.data.tags and "blind.pth" in card.text
    assert "train_config.yaml" not in {p.name for p in out.iterdir()}


def _eval_dir(folder: Path, tmp_path: Path) -> Path:
    out = tmp_path / "eval"
    assert cli_main(["eval", str(folder), "--episodes", "2", "--replays", "1", "--out", str(out)]) == 0
    return out


def test_an_evaluation_of_several_models_is_refused(tmp_path, run_dir):
    out = tmp_path / "eval"
    argv = ["eval", str(run_dir), str(run_dir), "--episodes", "2", "--replays", "1", "--out", str(out)]
    assert cli_main(argv) == 0
    with pytest.raises(NavzooError, match="holds 2 models"):
        write_repo_folder(run_dir, tmp_path / "repo", REPO, eval_dir=out)


def test_push_uploads_every_file_in_one_commit(repo_folder, fake_hub):
    info = upload(repo_folder, REPO, private=True, token=TOKEN, commit_message="first model")
    assert info.commit_url.startswith(f"https://huggingface.co/{REPO}/commit/")
    assert fake_hub.repos[REPO]["private"] is True
    uploaded = fake_hub.repos[REPO]["files"]["main"]
    assert uploaded == {p.name: p.read_bytes() for p in repo_folder.iterdir()}
    assert len(fake_hub.lfs) >= 1  # the weights went through Git LFS
    assert [c["header"]["summary"] for c in fake_hub.commits] == ["first model"]
    assert fake_hub.validated[0]["library_name"] == "navzoo"


def test_a_repush_keeps_what_a_person_added_to_the_card(repo_folder, fake_hub, tmp_path, monkeypatch):
    upload(repo_folder, REPO, token=TOKEN)
    first = ModelCard(fake_hub.repos[REPO]["files"]["main"]["README.md"].decode())
    assert first.text.lstrip().startswith(BEGIN) and f"# {REPO}" in first.text  # titled by the repository
    # Someone edits the card on the Hub: a paragraph after the generated part, a metadata key and a tag.
    edited = ModelCard(first.content)
    edited.data.datasets = ["someone/apartments"]
    edited.data.tags = [*edited.data.tags, "hand-picked"]
    edited.text = edited.text + "\n## Notes from the lab\n\nWorks best in small apartments.\n"
    fake_hub.repos[REPO]["files"]["main"]["README.md"] = str(edited).encode()
    # The next push refreshes the generated part and keeps the rest.
    card_file = repo_folder / "README.md"
    card_file.write_text(card_file.read_text().replace("## Evaluation", "## Evaluation\n\nRe-evaluated."))
    upload(repo_folder, REPO, token=TOKEN)
    second = ModelCard(fake_hub.repos[REPO]["files"]["main"]["README.md"].decode())
    assert "Works best in small apartments." in second.text and "Re-evaluated." in second.text
    assert second.text.count(BEGIN) == 1 and second.text.index(END) < second.text.index("Notes from the lab")
    assert second.data.datasets == ["someone/apartments"] and "hand-picked" in second.data.tags
    assert second.data.to_dict()["model-index"] == first.data.to_dict()["model-index"]


def test_push_to_a_branch_and_as_a_pull_request(repo_folder, fake_hub):
    upload(repo_folder, REPO, revision="v2", token=TOKEN)
    assert set(fake_hub.repos[REPO]["files"]["v2"]) >= {"README.md", WEIGHTS_NAME}
    info = upload(repo_folder, REPO, create_pr=True, token=TOKEN)
    assert info.pr_url == f"https://huggingface.co/{REPO}/discussions/1"
    assert fake_hub.commits[-1]["revision"] == "refs/pr/1"


def test_push_cli_dry_run_writes_the_folder_only(tmp_path, run_dir, fake_hub, capsys):
    out = tmp_path / "staged"
    argv = ["push", str(run_dir), REPO, "--episodes", "2", "--out", str(out), "--dry-run"]
    assert cli_main(argv) == 0
    assert (out / "README.md").is_file() and not fake_hub.commits
    assert cli_main(["push", str(run_dir), REPO, "--dry-run"]) == 2
    assert "--out" in capsys.readouterr().err


def test_rejected_token_is_reported_with_the_fix(repo_folder, fake_hub):
    fake_hub.status = 401
    with pytest.raises(HubError, match=r"hf auth login.*--token"):
        upload(repo_folder, REPO, token="hf_wrong")


def test_pull_from_an_offline_cache_prints_the_folder_navzoo_load_reads(tmp_path, repo_folder):
    cache = tmp_path / "hub"
    put_in_hf_cache(cache, REPO, repo_folder, "c" * 40)
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_HUB_CACHE": str(cache),
        "HF_HOME": str(tmp_path / "home"),
        "HF_ENDPOINT": "http://127.0.0.1:9",  # a closed port: a second guard against network use
    }
    pulled = _navzoo(["pull", REPO], env)
    folder = Path(pulled.stdout.strip().splitlines()[-1])
    assert folder == cache / f"models--{REPO.replace('/', '--')}" / "snapshots" / ("c" * 40)
    assert (folder / WEIGHTS_NAME).read_bytes() == (repo_folder / WEIGHTS_NAME).read_bytes()

    # the card's usage snippet runs as written against the pulled model
    snippet = re.search(r"```python\n(.*?)```", (repo_folder / "README.md").read_text(), re.S).group(1)
    ran = subprocess.run(
        [sys.executable, "-c", snippet], env=env, capture_output=True, text=True, timeout=300
    )
    assert ran.returncode == 0, ran.stderr

    missing = _navzoo(["pull", "someone/not-cached"], env, expect=2)
    assert "not in the Hugging Face cache" in missing.stderr and "offline mode is on" in missing.stderr


def _navzoo(argv: list[str], env: dict, expect: int = 0) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "navzoo.cli.main", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == expect, done.stderr
    return done


def test_pull_of_an_architecture_without_weights_says_so():
    with pytest.raises(UnknownModelError, match="nothing to pull"):
        pull("bps-se-resnet9")


def test_card_states_the_recipe_stage_by_stage():
    """An imitation run fine-tuned by DD-PPO (init_from) is described as what it was, earliest first."""
    from navzoo.hub.card import _stages

    imitation = {"algorithm": "dagger", "frames": 5_000_000, "wall_time_s": 5040.0}
    provenance = {
        "train_config": {"algorithm": "ppo"},
        "frames": 1_000_000,
        "wall_time_s": 1020.0,
        "initialised_from": {"source": "runs/depth-il", **imitation},
    }
    assert _stages(provenance) == (
        "imitation of the shortest-path teacher (DAgger) for 5,000,000 frames (1.4 h), "
        "then DD-PPO for 1,000,000 frames (17 min)"
    )
    assert _stages({"train_config": {"algorithm": "ppo"}, "frames": 10, "wall_time_s": 60.0}) == (
        "DD-PPO for 10 frames (1 min)"
    )
    # Fine-tuned in the same run (finetune.frames): the run lists its stages.
    one_run = {
        "train_config": {"algorithm": "dagger"},
        "stages": [imitation, {"algorithm": "ppo", "frames": 1_000_000, "wall_time_s": 1020.0}],
    }
    assert _stages(one_run) == _stages(provenance)
    # The teacher is the run's own, or the one recorded for the run it started from.
    mapped = {**one_run, "train_config": {"algorithm": "dagger", "imitation": {"teacher": "map-planner"}}}
    assert _stages(mapped).startswith("imitation of the map-planner teacher (DAgger) for 5,000,000 frames")
    distilled = {
        **one_run,
        "train_config": {
            "algorithm": "dagger",
            "imitation": {"teacher": "policy", "teacher_model": "navzoo-pointnav-depth"},
        },
    }
    assert _stages(distilled).startswith("imitation of the `navzoo-pointnav-depth` policy teacher (DAgger)")
    started = {**provenance, "initialised_from": {**provenance["initialised_from"], "teacher": "map-planner"}}
    assert _stages(started).startswith("imitation of the map-planner teacher (DAgger)")
    # Kickstarting names the teacher it learnt beside.
    kicked = {
        **started,
        "train_config": {"algorithm": "kickstart", "imitation": {"teacher": "map-planner"}},
    }
    assert _stages(kicked) == (
        "imitation of the map-planner teacher (DAgger) for 5,000,000 frames (1.4 h), "
        "then DD-PPO kickstarted by the map-planner teacher for 1,000,000 frames (17 min)"
    )
    # A run that grew the seen_map into the policy it started from says so where it begins.
    grown = {
        **provenance,
        "initialised_from": {**provenance["initialised_from"], "added_inputs": ["seen_map"]},
    }
    assert _stages(grown) == (
        "imitation of the shortest-path teacher (DAgger) for 5,000,000 frames (1.4 h), "
        "then with the seen_map sensor added as an input, DD-PPO for 1,000,000 frames (17 min)"
    )


def test_card_reproduces_a_run_with_its_number_of_workers():
    """A run's environments and rank overrides are per worker: the card's command launches as many."""
    from navzoo.hub.card import _reproduce

    one = _reproduce({"source": "navzoo train", "workers": 1})
    assert "`navzoo train train_config.yaml --run-dir runs/<name>`" in one
    two = _reproduce({"source": "navzoo train", "workers": 2})
    assert "`torchrun --standalone --nproc-per-node 2 -m navzoo train train_config.yaml" in two
