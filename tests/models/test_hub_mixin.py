"""Policies' Hub methods (navzoo.models.hub_mixin): save_pretrained, from_pretrained and push_to_hub in
huggingface_hub's ModelHubMixin style, over navzoo's own folder format. Uploads and downloads run
huggingface_hub's code end to end against the fake Hub of tests/fake_hub.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from huggingface_hub import ModelCard, ModelHubMixin

import navzoo
from navzoo.errors import ConfigError, UnknownModelError, WeightsFormatError
from navzoo.models import (
    GOAL_SENSOR,
    ActorCritic,
    NeuralControllerConfig,
    NeuralControllerPolicy,
    PointNavPolicy,
    PolicyConfig,
)
from navzoo.models.hub_mixin import CARD_BEGIN, CARD_END
from navzoo.models.weights import CONFIG_NAME, WEIGHTS_NAME
from tests.hub.fake_hub import TOKEN

REPO = "someone/depth-agent"
SMALL = PolicyConfig(
    backbone="simple_cnn", sensors=("depth", GOAL_SENSOR), resolution=(40, 40), hidden_size=16
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
    assert card.text.lstrip().startswith(f"{CARD_BEGIN}\n# small-depth") and card.text.rstrip().endswith(
        CARD_END
    )


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
    url = policy.push_to_hub(REPO, token=TOKEN, commit_message="first", private=True)
    assert REPO in str(url)
    assert fake_hub.repos[REPO]["private"] is True
    uploaded = fake_hub.repos[REPO]["files"]["main"]
    assert set(uploaded) == {CONFIG_NAME, WEIGHTS_NAME, "README.md"}
    assert [c["header"]["summary"] for c in fake_hub.commits] == ["first"]  # one commit
    card = ModelCard(uploaded["README.md"].decode())
    assert card.data.library_name == "navzoo"
    assert card.text.lstrip().startswith(f"{CARD_BEGIN}\n# {REPO}")
    assert f'navzoo.load("hf-hub:{REPO}")' in card.text

    cache = tmp_path / "other-cache"
    loaded = PointNavPolicy.from_pretrained(REPO, cache_dir=cache, token=TOKEN, map_location="cpu")
    assert same_weights(loaded, policy) and loaded.name == "small-depth"
    monkeypatch.setenv("HF_TOKEN", TOKEN)  # where huggingface_hub finds a token nobody passed
    assert same_weights(navzoo.load(f"hf-hub:{REPO}", cache_dir=cache), policy)
    # Offline, the cached copy is enough.
    assert same_weights(ActorCritic.from_pretrained(REPO, cache_dir=cache, local_files_only=True), policy)


def test_a_second_push_keeps_what_a_person_wrote_on_the_card(policy, fake_hub, tmp_path, monkeypatch):
    policy.push_to_hub(REPO, token=TOKEN)
    files = fake_hub.repos[REPO]["files"]["main"]
    # Someone edits the card on the Hub: a note above the generated block, a section below it, a tag.
    edited = ModelCard(files["README.md"].decode())
    edited.text = f"Trained for the lab's robot.\n\n{edited.text.strip()}\n\n## Notes\n\nSlow on stairs.\n"
    edited.data.tags = [*edited.data.tags, "hand-picked"]
    files["README.md"] = str(edited).encode()

    policy.push_to_hub(REPO, token=TOKEN, model_card_kwargs={"task": "re-pushed"})
    card = ModelCard(files["README.md"].decode())
    text = card.text.strip()
    assert text.startswith("Trained for the lab's robot.") and text.endswith("Slow on stairs.")
    assert card.text.count(CARD_BEGIN) == 1 and "A re-pushed navigation policy" in card.text  # regenerated
    assert "hand-picked" in card.data.tags and card.data.library_name == "navzoo"
    assert len(fake_hub.commits) == 2


def test_create_model_reads_a_hub_repository_with_or_without_its_weights(
    policy, fake_hub, tmp_path, monkeypatch
):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    policy.push_to_hub(REPO, token=TOKEN)
    loaded = navzoo.create_model(f"hf-hub:{REPO}", pretrained=True)
    assert same_weights(loaded, policy) and not loaded.training
    fresh = navzoo.create_model(f"hf-hub:{REPO}", pretrained=False)  # the architecture, new weights
    assert fresh.config == policy.config and not same_weights(fresh, policy)
    with pytest.raises(ConfigError, match=r"config\.json fixes the architecture"):
        navzoo.create_model(f"hf-hub:{REPO}", pretrained=True, hidden_size=32)


def test_from_pretrained_takes_pytorch_mixins_keywords_where_they_mean_something(policy, tmp_path):
    policy.save_pretrained(tmp_path)
    assert same_weights(PointNavPolicy.from_pretrained(tmp_path, strict=True, proxies=None), policy)
    for keywords, reason in (
        ({"strict": False}, "navzoo loads every tensor"),
        ({"proxies": {"https": "http://proxy:3128"}}, "HTTPS_PROXY"),
        ({"hidden_size": 32}, r"config\.json fixes the architecture.*navzoo\.create_model"),
    ):
        with pytest.raises(ConfigError, match=reason):
            PointNavPolicy.from_pretrained(tmp_path, **keywords)


def test_saving_the_same_policy_twice_gives_the_same_bytes(policy, tmp_path):
    for folder in ("one", "two"):
        policy.save_pretrained(tmp_path / folder)
    for name in (CONFIG_NAME, WEIGHTS_NAME, "README.md"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()


def test_save_pretrained_can_push_as_the_mixin_does(policy, fake_hub, tmp_path, monkeypatch):
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
