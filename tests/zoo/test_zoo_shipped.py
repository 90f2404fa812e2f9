"""navzoo's shipped agents: inside the package, small, loaded with no network, and better navigators than
the goal-follower baseline on a fixed set of val episodes.

The network is cut for real: huggingface_hub's HTTP client is replaced by one whose every request fails,
so a load that tried to download anything would raise.
"""

from __future__ import annotations

import httpx2
import pytest

import navzoo
from navzoo.agents.baselines import make_baseline
from navzoo.agents.policy_agent import PolicyAgent, sim_settings
from navzoo.evaluation import evaluate, summarize
from navzoo.models.weights import WEIGHTS_NAME
from navzoo.sim import BatchSim, SimConfig
from navzoo.sim.episodes import episodes_for
from navzoo.train.config import TrainConfig, load_config
from navzoo.zoo.registry import PACKAGED_WEIGHTS, model_entry
from tests.support import hub_transport

SHIPPED = ("navzoo-pointnav-blind", "navzoo-pointnav-depth", "navzoo-pointnav-rgb")
STRIDE = 12  # every 12th val episode: 50 episodes, two from each of the 24 val scenes of all four families
MAX_TOTAL_MB = 20
RUN_KEEPING = ("keep_checkpoints", "log_every", "wandb")  # how a run is kept and logged, not what it learns


@pytest.fixture
def no_network():
    def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError(f"the test forbids network access ({request.url})")

    with hub_transport(refuse):
        yield


def test_the_shipped_models_are_packaged_small_and_listed_as_local():
    assert set(SHIPPED) <= set(navzoo.list_models(local=True))
    total = 0
    for name in SHIPPED:
        folder = model_entry(name).packaged
        assert folder is not None and folder.parent == PACKAGED_WEIGHTS
        total += sum(f.stat().st_size for f in folder.iterdir())
        provenance = navzoo.load(name).provenance
        assert (
            provenance["source"] == "navzoo train" and provenance["train_config"]["sim"]["split"] == "train"
        )
        assert {"frames", "wall_time_s", "machine"} <= set(provenance)
    assert total < MAX_TOTAL_MB * 2**20


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_model_was_trained_by_its_preset(name):
    """`navzoo train NAME` as one command made the weights: the config they record, read by today's code, is
    the preset's. A preset edited without retraining its agent fails here."""
    recorded = TrainConfig.from_dict(navzoo.load(name).provenance["train_config"]).to_dict()
    preset = load_config(name).to_dict()
    for key in RUN_KEEPING:
        del recorded[key], preset[key]
    assert recorded == preset


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_model_loads_offline_and_beats_the_goal_follower(name, no_network, one_thread):
    policy = navzoo.load(name)
    assert (model_entry(name).packaged / WEIGHTS_NAME).is_file()
    config = SimConfig(split="val", seed=0, **sim_settings(policy.config))
    episodes = episodes_for(config)[::STRIDE]
    sim = BatchSim(config.replace(num_envs=len(episodes)), episodes)
    try:
        agent = PolicyAgent(policy, sim.num_envs, seed=0)
        learned = summarize(evaluate(sim, agent, len(episodes), progress=False))
        follower = summarize(
            evaluate(sim, make_baseline("goal-follower", sim), len(episodes), progress=False)
        )
    finally:
        sim.close()
    assert learned["spl"] > follower["spl"], (learned["spl"], follower["spl"])
    assert learned["success"] > follower["success"], (learned["success"], follower["success"])
