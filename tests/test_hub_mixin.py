"""Policies' Hub methods (navzoo.models.hub_mixin): save_pretrained, from_pretrained and push_to_hub in
huggingface_hub's ModelHubMixin style, over navzoo's own folder format. Uploads and downloads run
huggingface_hub's code end to end against the fake Hub of tests/fake_hub.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from fake_hub import TOKEN
from huggingface_hub import ModelCard, ModelHubMixin

import navzoo
from navzoo.errors import UnknownModelError, WeightsFormatError
from navzoo.models import (
    GOAL_SENSOR,
    ActorCritic,
    NeuralControllerConfig,
    NeuralControllerPolicy,
    PointNavPolicy,
    PolicyConfig,
)
from navzoo.models.weights import CONFIG_NAME, WEIGHTS_NAME

REPO = "someone/depth-agent"
SMALL = PolicyConfig(
    backbone="simple_cnn", sensors=("depth", GOAL_SENSOR), resolution=(32, 32), hidden_size=16
)


def same_weights(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    one, two = a.state_dict(), b.state_dict()
    return one.keys() == two.keys() and all(torch.equal(one[k], two[k]) for k in one)


@pytest.fixture
def policy() -> PointNavPolicy:
    torch.manual_seed(0)
    return PointNavPolicy(SMALL.replace(metadata=SMALL.metadata.replace(name="small-depth")))


def test_policies_are_hub_mixins_with_navzoo_card_metadata(policy):
    assert isinstance(policy, ModelHubMixin)
    card = policy.generate_model_card()
    assert card.data.library_name == "navzoo"
    assert {"navzoo", "navigation", "reinforcement-learning"} <= set(card.data.tags)
    assert card.text.lstrip().startswith("# small-depth")


def test_save_pretrained_writes_navzoo_format_that_every_loader_reads(policy, tmp_path):
    policy.save_pretrained(tmp_path)
    assert {p.name for p in tmp_path.iterdir()} == {CONFIG_NAME, WEIGHTS_NAME, "README.md"}
    config = json.loads((tmp_path / CONFIG_NAME).read_text())
    assert config["format"] == "navzoo-policy" and config["name"] == "small-depth"
    assert config["architecture"] == SMALL.to_dict()  # not overwritten by the mixin's own config.json
    for loaded in (
        PointNavPolicy.from_pretrained(tmp_path),
        ActorCritic.from_pretrained(str(tmp_path)),
        navzoo.load(tmp_path),
    ):
        assert type(loaded) is PointNavPolicy and not loaded.training
        assert loaded.name == "small-depth" and same_weights(loaded, policy)


def test_from_pretrained_builds_the_class_the_config_names(tmp_path):
    planner = NeuralControllerPolicy(
        NeuralControllerConfig(controller=SMALL, hidden_size=8, num_recurrent_layers=1)
    )
    planner.save_pretrained(tmp_path)
    loaded = ActorCritic.from_pretrained(tmp_path)
    assert type(loaded) is NeuralControllerPolicy and same_weights(loaded, planner)
    with pytest.raises(WeightsFormatError, match="holds a NeuralControllerPolicy, not a PointNavPolicy"):
        PointNavPolicy.from_pretrained(tmp_path)


def test_push_to_hub_then_from_pretrained_round_trip(policy, fake_hub, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
    url = policy.push_to_hub(REPO, token=TOKEN, commit_message="first", private=True)
    assert REPO in str(url)
    assert fake_hub.repos[REPO]["private"] is True
    uploaded = fake_hub.repos[REPO]["files"]["main"]
    assert set(uploaded) == {CONFIG_NAME, WEIGHTS_NAME, "README.md"}
    assert [c["header"]["summary"] for c in fake_hub.commits] == ["first"]  # one commit
    card = ModelCard(uploaded["README.md"].decode())
    assert card.data.library_name == "navzoo"
    assert card.text.lstrip().startswith(f"# {REPO}") and f'navzoo.load("hf-hub:{REPO}")' in card.text

    cache = tmp_path / "other-cache"
    loaded = PointNavPolicy.from_pretrained(REPO, cache_dir=cache, token=TOKEN, map_location="cpu")
    assert same_weights(loaded, policy) and loaded.name == "small-depth"
    monkeypatch.setenv("HF_TOKEN", TOKEN)  # where huggingface_hub finds a token nobody passed
    assert same_weights(navzoo.load(f"hf-hub:{REPO}", cache_dir=cache), policy)
    # Offline, the cached copy is enough.
    assert same_weights(ActorCritic.from_pretrained(REPO, cache_dir=cache, local_files_only=True), policy)


def test_saving_the_same_policy_twice_gives_the_same_bytes(policy, tmp_path):
    for folder in ("one", "two"):
        policy.save_pretrained(tmp_path / folder)
    for name in (CONFIG_NAME, WEIGHTS_NAME, "README.md"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()


def test_save_pretrained_can_push_as_the_mixin_does(policy, fake_hub, tmp_path):
    policy.save_pretrained(tmp_path / "agent", push_to_hub=True, repo_id=REPO, token=TOKEN)
    assert (tmp_path / "agent" / WEIGHTS_NAME).read_bytes() == fake_hub.repos[REPO]["files"]["main"][
        WEIGHTS_NAME
    ]


def test_names_from_pretrained_cannot_read_are_refused_with_the_way_out(tmp_path):
    with pytest.raises(UnknownModelError, match=r"zoo names load with navzoo\.load"):
        ActorCritic.from_pretrained("navzoo-pointnav-depth")
    with pytest.raises(UnknownModelError, match="neither an existing folder"):
        ActorCritic.from_pretrained("./no-such-folder")
    with pytest.raises(UnknownModelError, match="not an existing folder"):
        ActorCritic.from_pretrained(Path(tmp_path / "missing"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(WeightsFormatError, match=r"config\.json does not exist"):
        ActorCritic.from_pretrained(tmp_path / "empty")
