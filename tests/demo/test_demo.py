"""The replay demo: ReplayView's pictures, the app's functions called directly, and the served app through
gradio_client. Episodes are compared with `evaluate` on the same split, models are small ones saved into
temporary --models folders, and replays are written by navzoo.evaluation.replay.save_replay."""

import dataclasses
import gzip
import socket
import time
import traceback
import urllib.request
from urllib.error import HTTPError

import huggingface_hub.constants
import numpy as np
import pytest
import torch
from PIL import Image

import navzoo
from navzoo.agents.baselines import make_baseline
from navzoo.agents.policy_agent import PolicyAgent, sim_settings
from navzoo.cli.main import build_parser
from navzoo.errors import ConfigError, ReplayError, UnknownModelError
from navzoo.evaluation import evaluate
from navzoo.evaluation.replay import load_replay, make_replay, save_replay
from navzoo.evaluation.replay_view import ReplayView
from navzoo.models import ModelMetadata, PointNavPolicy, PolicyConfig
from navzoo.models.weights import save_pretrained
from navzoo.sim import ACTION_NAMES, BatchSim, SimConfig
from navzoo.sim.episodes import episodes_for
from navzoo.zoo.habitat_checkpoints import export_habitat_checkpoint
from navzoo.zoo.registry import model_entry
from tests.support import free_port, put_in_hf_cache

gradio_client = pytest.importorskip(
    "gradio_client", reason="the demo needs gradio: pip install 'navzoo[demo]'"
)
from navzoo.demo import app as demo_app  # noqa: E402
from navzoo.demo import player  # noqa: E402
from navzoo.demo.episodes import load_agent, pick_episode, run_episode  # noqa: E402

FIRST_SCENE = ("apartment-s",)  # val episode 0 lies in the first apartment-s scene, whatever the families


pytestmark = pytest.mark.usefixtures("one_thread_module")


def val_sim(**changes) -> BatchSim:
    """The val split's first scene only: its episode 0 is the full split's episode 0."""
    config = SimConfig(split="val", num_envs=1, resolution=(64, 64), scene_families=FIRST_SCENE)
    return BatchSim(config.replace(**changes))


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """--models and --replays roots with a tiny depth model, a blind model and a saved oracle replay; an
    outside folder with a model and a replay; and symlinks from inside the roots to them."""
    base = tmp_path_factory.mktemp("demo")
    models, replays, outside = base / "models", base / "replays", base / "outside"
    torch.manual_seed(0)
    depth = navzoo.create_model("bps-se-resnet9", resolution=(32, 32), hidden_size=64, base_planes=16)
    save_pretrained(depth, models / "runs" / "depth-run", name="tiny-depth")
    save_pretrained(
        navzoo.create_model("pointnav-blind", hidden_size=64), models / "blind", name="tiny-blind"
    )
    save_pretrained(navzoo.create_model("pointnav-blind", hidden_size=64), outside / "secret-model")
    sim = val_sim()
    result = evaluate(sim, make_baseline("oracle", sim), 1, progress=False)[0]
    replay = save_replay(replays / "oracle" / "episode-0.replay.json.gz", make_replay(sim, result, "oracle"))
    sim.close()
    (outside / "secret.replay.json.gz").write_bytes(replay.read_bytes())
    (models / "linked-out").symlink_to(outside / "secret-model", target_is_directory=True)
    (replays / "linked-out.replay.json.gz").symlink_to(outside / "secret.replay.json.gz")
    return {"models": models, "replays": replays, "outside": outside, "replay": replay, "result": result}


@pytest.fixture(scope="module")
def demo(folders):
    return demo_app.Demo(models=[folders["models"]], replays=[folders["replays"]])


# --- ReplayView ----------------------------------------------------------------------------------------
def test_replay_view_images_and_frames(folders):
    replay = load_replay(folders["replay"])
    view = ReplayView(replay)
    last = view.num_steps
    assert last == replay.num_steps > 5
    top = view.map_image(0)
    assert top.dtype == np.uint8 and top.ndim == 3 and top.shape[2] == 3
    assert view.map_image(last).shape == top.shape
    assert not np.array_equal(view.map_image(last), top)  # the trajectory grows
    images = view.observation_images(3)
    assert list(images) == ["depth"] and images["depth"].shape == (256, 256, 3)  # 64x64 upscaled 4x
    assert images["depth"].dtype == np.uint8
    assert not np.array_equal(images["depth"], view.observation_images(last)["depth"])
    frames = [view.frame(step) for step in (0, last // 2, last)]
    assert {f.shape for f in frames} == {(480, 864, 3)}
    assert view.frame(2, size=(240, 428)).shape == (240, 428, 3)
    with pytest.raises(ConfigError, match="even"):
        view.frame(0, size=(241, 428))
    for bad in (-1, last + 1, 1.5, "3"):
        with pytest.raises(ConfigError, match="step"):
            view.map_image(bad)
    info = view.step_info(0)
    assert info["action"] == ACTION_NAMES[int(replay.actions[0])] and info["step"] == 0
    assert info["reward"] == pytest.approx(float(replay.rewards[0]))
    end = view.step_info(last)
    assert end["action"] is None and end["reward"] is None
    assert end["cumulative_reward"] == pytest.approx(replay.metrics["episode_return"], abs=1e-4)
    assert f"SPL {replay.metrics['spl']:.3f}" in view.caption(last)


# --- the app's functions, called directly ----------------------------------------------------------------
def test_episode_indices_follow_the_split():
    config = SimConfig(split="test", num_envs=1, scene_families=("apartment-s", "apartment"))
    episodes = episodes_for(config)
    for index in (0, 24, 25, 26, 149, 299):
        assert pick_episode(config, index) == episodes[index]
    with pytest.raises(ConfigError, match=r"0 \.\. 299"):
        pick_episode(config, 300)
    train = SimConfig(split="train", num_envs=1)
    assert pick_episode(train, 123_456) == pick_episode(train, 123_456)
    assert pick_episode(train, 123_456).scene_id.split("/")[1] == "train"


def test_baseline_episode_matches_evaluation(demo):
    start = time.perf_counter()
    (view,) = demo.run("oracle", None, "PointGoal", "val", 0, 0)
    seconds = time.perf_counter() - start
    sim = val_sim()
    expected = evaluate(sim, make_baseline("oracle", sim, seed=0), 1, progress=False)[0]
    assert view.replay.metrics == expected.metrics()
    np.testing.assert_array_equal(view.replay.actions, expected.actions)
    assert view.replay.metrics["success"] == 1.0
    assert seconds < 30, f"an oracle episode took {seconds:.1f} s"
    step = view.num_steps // 2
    top, cams, table = player.step_outputs([view], step)[:3]
    assert top.shape == view.map_image(step).shape and top.dtype == np.uint8
    assert cams.shape == (256, 256, 3)
    assert f'<tr class="current"><td>{step}</td>' in table
    markdown = player.metrics_markdown([view])
    assert "| SPL |" in markdown and "| success | 1 |" in markdown and "apartment-s/val/00000" in markdown


@pytest.mark.parametrize("folder,sensors", [("runs/depth-run", ("depth",)), ("blind", ())])
def test_learned_model_episode_matches_evaluation(demo, folders, folder, sensors):
    path = folders["models"] / folder
    assert (f"models/{folder} (folder)", f"models/{folder}") in demo.model_choices()  # as the page names it
    (view,) = demo.run(f"models/{folder}", None, "PointGoal", "val", 0, 7, "sampled")
    policy = navzoo.load(path)
    sim = val_sim(**sim_settings(policy.config))
    assert sim.config.sensors == sensors
    expected = evaluate(sim, PolicyAgent(policy, 1, seed=7), 1, progress=False)[0]
    assert view.replay.metrics == expected.metrics()
    np.testing.assert_allclose(view.replay.values, expected.values, rtol=1e-5, atol=1e-6)
    assert view.replay.model["name"] == policy.name and view.replay.action_mode == "sampled"
    info = view.step_info(0)
    assert info["value"] == pytest.approx(float(expected.values[0]), abs=1e-5)
    assert sum(info["action_probs"].values()) == pytest.approx(1.0, abs=1e-5)
    images = view.observation_images(0)
    # the depth model's 32x32 view is upscaled 8x; the blind one is shown with a 64x64 depth camera
    assert images["depth"].shape == (256, 256, 3)
    assert ("blind" in view.view_names()[0]) == (not sensors)


def test_flee_and_explore(demo, folders):
    (flee,) = demo.run("random", None, "Flee", "val", 0, 1)
    assert flee.task == "flee" and flee.num_steps == 500  # never stops without a goal to stop at
    assert 0 <= flee.replay.metrics["flee_distance"] <= 1 and "spl" not in flee.replay.metrics
    assert flee.goal is None and flee.path is None
    (explore,) = demo.run("forward-only", None, "Explore", "val", 0, 1)
    assert explore.replay.metrics["visited_cells"] >= 1
    assert "cells visited" in player.metrics_markdown([explore])
    with pytest.raises(ConfigError, match="'pointnav' for the goal-follower baseline"):
        demo.run("goal-follower", None, "Flee", "val", 0, 0)
    with pytest.raises(ConfigError, match="PointGoal policy"):
        demo.run(str(folders["models"] / "blind"), None, "Explore", "val", 0, 0)


def test_a_transferred_model_runs_on_its_own_task(tmp_path):
    config = PolicyConfig(
        backbone=None,
        sensors=(),
        resolution=None,
        dummy_goal=(1.0, 0.0),
        hidden_size=32,
        rnn_type="GRU",
        num_recurrent_layers=1,
    )
    flee = PointNavPolicy(config.replace(metadata=ModelMetadata(task="flee")))
    folder = save_pretrained(flee, tmp_path / "flee-run", name="tiny-flee")
    demo = demo_app.Demo(models=[tmp_path])
    (view,) = demo.run(str(folder), None, "Flee", "val", 0, 0)
    assert view.task == "flee" and view.replay.model["task"] == "flee" and view.replay.values is not None
    assert 0 <= view.replay.metrics["flee_distance"] <= 1 and "spl" not in view.replay.metrics
    with pytest.raises(ConfigError, match=r"is a Flee policy \(pick the Flee task\)"):
        demo.run(str(folder), None, "PointGoal", "val", 0, 0)


def test_side_by_side_holds_the_shorter_episode(demo):
    views = demo.run("oracle", "goal-follower", "PointGoal", "val", 0, 0)
    short, long = views
    assert short.num_steps < long.num_steps == player.last_step(views) == 500
    late = player.step_outputs(views, long.num_steps)
    np.testing.assert_array_equal(late[0], short.map_image(short.num_steps))
    np.testing.assert_array_equal(late[3], long.map_image(long.num_steps))
    assert "| oracle | goal-follower |" in player.metrics_markdown(views)
    twice = demo.run("oracle", "oracle", "PointGoal", "val", 0, 0)
    assert [v.label for v in twice] == ["oracle", "oracle-2"]


def test_open_saved_replays(demo, folders, tmp_path):
    # as the page names them; the symlink to a file outside the roots is not listed
    assert demo.replay_choices() == [("replays/oracle/episode-0.replay.json.gz",) * 2]
    (view,) = demo.open("replays/oracle/episode-0.replay.json.gz")
    assert demo.open(str(folders["replay"]))[0].replay.metrics == view.replay.metrics  # or its full path
    assert view.replay.metrics == folders["result"].metrics()
    # an upload (gradio hands over a file in its own cache) comes first, then the chosen files
    uploaded = tmp_path / "upload.replay.json.gz"
    uploaded.write_bytes(folders["replay"].read_bytes())
    views = demo.open(str(folders["replay"]), None, str(uploaded))
    assert len(views) == 2 and views[0].replay.metrics == views[1].replay.metrics


def test_bad_input_gives_navzoo_errors(demo, folders, tmp_path):
    models, replays = folders["models"], folders["replays"]
    with pytest.raises(UnknownModelError, match=r"unknown model 'no-such-model'.*baseline"):
        demo.run("no-such-model", None, "PointGoal", "val", 0, 0)
    with pytest.raises(UnknownModelError, match="not a model folder"):
        demo.run(str(models / "runs" / "missing"), None, "PointGoal", "val", 0, 0)
    for episode in (600, -1, 2.5):
        with pytest.raises(ConfigError, match="episode"):
            demo.run("oracle", None, "PointGoal", "val", episode, 0)
    garbage = replays / "garbage.replay.json.gz"
    garbage.write_bytes(b"\x00\x01 not a replay at all")
    truncated = replays / "truncated.replay.json.gz"
    truncated.write_bytes(folders["replay"].read_bytes()[:200])
    not_replay = replays / "other.replay.json.gz"
    with gzip.open(not_replay, "wt") as f:
        f.write('{"format": "something-else"}')
    try:
        for path, message in (
            (garbage, "not a gzip"),
            (truncated, "truncated"),
            (not_replay, "not a navzoo"),
        ):
            with pytest.raises(ReplayError, match=message):
                demo.open(str(path))
    finally:
        for path in (garbage, truncated, not_replay):
            path.unlink()
    with pytest.raises(ReplayError, match="no replay chosen"):
        demo.open(None)
    # well-formed files the demo still cannot show: a scene that does not exist, cameras too large
    saved = load_replay(folders["replay"])
    nowhere = dataclasses.replace(
        saved, episode=dataclasses.replace(saved.episode, scene_id="nowhere/val/00000")
    )
    huge = dataclasses.replace(saved, sim_config=saved.sim_config.replace(resolution=(4096, 4096)))
    for replay, error, message in ((nowhere, ConfigError, "scene_id"), (huge, ReplayError, "4096")):
        path = save_replay(tmp_path / "bad.replay.json.gz", replay)
        with pytest.raises(error, match=message):
            demo.open(None, None, str(path))  # as an upload


def test_paths_outside_the_roots_are_refused(demo, folders):
    models, replays, outside = folders["models"], folders["replays"], folders["outside"]
    values = [value for _, value in demo.model_choices()]
    assert "models/blind" in values and not any("secret" in v or "linked" in v for v in values)
    refused = "outside the folders this demo may read"
    for text in (
        str(outside / "secret-model"),
        f"{models}/../outside/secret-model",  # traversal
        str(models / "linked-out"),  # a symlink from inside to outside
    ):
        with pytest.raises(UnknownModelError, match=refused):
            demo.run(text, None, "PointGoal", "val", 0, 0)
    for text in (
        str(outside / "secret.replay.json.gz"),
        f"{replays}/oracle/../../outside/secret.replay.json.gz",
        str(replays / "linked-out.replay.json.gz"),
        "/etc/passwd",
    ):
        with pytest.raises(ReplayError, match=refused):
            demo.open(text)
    with pytest.raises(ReplayError, match="no folders were given with --replays"):
        demo_app.Demo().open(str(folders["replay"]))


def test_zoo_models_from_the_local_cache(tmp_path, monkeypatch, connections):
    """A zoo entry whose weights are in the Hugging Face cache is offered and loads without the network."""
    from tests.zoo.test_zoo import hub_entry

    monkeypatch.setitem(navzoo.zoo.registry._REGISTRY, "hub-blind", hub_entry("hub-blind", "someone/blind"))
    cache = tmp_path / "hub"
    blind = navzoo.create_model("pointnav-blind", hidden_size=16)
    put_in_hf_cache(cache, "someone/blind", save_pretrained(blind, tmp_path / "weights"), "a" * 40)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))
    demo = demo_app.Demo()
    assert ("hub-blind (zoo)", "hub-blind") in demo.model_choices()
    agent = load_agent(demo.sources, "hub-blind")
    assert agent.policy.name == "pointnav-blind"
    replay = run_episode(agent, "PointGoal", "val", 0, 0)
    assert replay.model["name"] == "pointnav-blind" and replay.metrics["episode_index"] == 0
    assert not outside_hosts(connections), "loading from the cache tried to reach another machine"


def test_released_habitat_agents_are_offered_and_download_when_chosen(release_server, tmp_path):
    """Every released DD-PPO entry is in the model list; choosing one fetches it (from the loopback server
    standing in for habitat's release folder) and runs it."""
    demo = demo_app.Demo()
    for name in navzoo.list_models(pretrained=True):
        if model_entry(name).release_file:
            assert (f"{name} (zoo, downloads when chosen)", name) in demo.model_choices()
    blind = navzoo.create_model("pointnav-blind")
    export_habitat_checkpoint(blind, release_server.root / model_entry("pointnav-blind").release_file)
    (view,) = demo.run("pointnav-blind", None, "PointGoal", "val", 0, 0)
    assert view.replay.model["name"] == "pointnav-blind"
    assert ("pointnav-blind (zoo)", "pointnav-blind") in demo.model_choices()


def test_default_model_is_the_packaged_one_when_there(monkeypatch):
    """navzoo-pointnav-depth is the page's first choice once it is local (shipped in the package or cached);
    it then runs as `evaluate` runs it."""
    demo = demo_app.Demo()
    if "navzoo-pointnav-depth" not in navzoo.list_models(local=True):
        assert demo.sources.default_model() == "goal-follower"
        pytest.skip("navzoo-pointnav-depth is not available locally: the default is goal-follower")
    assert demo.sources.default_model() == "navzoo-pointnav-depth"
    (view,) = demo.run("navzoo-pointnav-depth", None, "PointGoal", "val", 0, 0)
    policy = navzoo.load("navzoo-pointnav-depth", local_files_only=True)
    sim = val_sim(**sim_settings(policy.config))
    expected = evaluate(sim, PolicyAgent(policy, 1, seed=0), 1, progress=False)[0]
    assert view.replay.metrics == expected.metrics()
    assert view.replay.model["name"] == "navzoo-pointnav-depth"


def test_cli_registers_demo():
    args = build_parser("demo").parse_args(
        ["demo", "--models", "a", "--models", "b", "--replays", "r", "--port", "0"]
    )
    assert args.models == ["a", "b"] and args.replays == ["r"] and args.host == "127.0.0.1"
    assert args.device == "auto" and args.threads == 1  # the default of every command


# --- the served app, through gradio_client ------------------------------------------------------------
@pytest.fixture
def connections(monkeypatch):
    """Every host this process looks up or connects to while the test runs, except for the test's own
    gradio_client.Client (huggingface_hub builds its request headers with a lookup of huggingface.co)."""
    seen = []
    real_connect, real_getaddrinfo = socket.socket.connect, socket.getaddrinfo

    def record(host) -> None:
        if not any(frame.filename.endswith("gradio_client/client.py") for frame in traceback.extract_stack()):
            seen.append(host)

    def connect(self, address):
        record(address[0] if isinstance(address, tuple) else address)
        return real_connect(self, address)

    def getaddrinfo(host, *args, **kwargs):
        record(host)
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return seen


def outside_hosts(connections) -> set:
    return {host for host in connections if host not in ("127.0.0.1", "localhost", "::1")}


@pytest.fixture
def server(folders, tmp_path, monkeypatch, connections):
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio"))
    app = demo_app.build_app(models=[folders["models"]], replays=[folders["replays"]])
    port = free_port()
    demo_app.launch(app, port=port, prevent_thread_lock=True, quiet=True)
    yield f"http://127.0.0.1:{port}/"
    app.close()


def test_served_app_through_gradio_client(server, folders, connections, tmp_path):
    client = gradio_client.Client(server, verbose=False, analytics_enabled=False)  # no telemetry either
    error, slider, metrics, title_a, _, map_a, view_a, steps_a, map_b, view_b, steps_b, *_ = client.predict(
        "oracle", "goal-follower", "PointGoal", "val", 0, 0, "sampled", api_name="/run_episode"
    )
    assert error["visible"] is False and slider["maximum"] == 500
    assert "| oracle | goal-follower |" in metrics and "| SPL |" in metrics
    assert title_a.startswith("### A: oracle") and "success 1" in title_a
    for path in (map_a, view_a, map_b, view_b):
        with Image.open(path) as image:
            assert image.format == "PNG" and image.mode == "RGB"
    assert Image.open(view_a).size == (256, 256)
    assert '<tr class="current"><td>0</td>' in steps_a and '<tr class="current"><td>0</td>' in steps_b
    error, map_a, view_a, steps_a, map_b, view_b, steps_b = client.predict(499, api_name="/show_step")
    assert '<tr class="current"><td>499</td>' in steps_b and "(end)" in steps_a  # the oracle has ended

    opened = client.predict(str(folders["replay"]), "", None, api_name="/open_replay")
    assert opened[0]["visible"] is False and "| oracle |" in opened[2]
    upload = gradio_client.handle_file(str(folders["replay"]))
    opened = client.predict("", str(folders["replay"]), upload, api_name="/open_replay")
    assert "| oracle | oracle |" in opened[2]
    garbage = tmp_path / "garbage.replay.json.gz"
    garbage.write_bytes(b"\x1f\x8b\x08 truncated gzip")
    error = client.predict("", "", gradio_client.handle_file(str(garbage)), api_name="/open_replay")[0]
    assert error["visible"] is True and "not a gzip-compressed JSON replay" in error["value"]

    # bad input: a message in the page's error box, and the server keeps serving
    for call, message in (
        (("no-such-model", "", "PointGoal", "val", 0, 0, "sampled", "/run_episode"), "unknown model"),
        (("oracle", "", "PointGoal", "val", 10**6, 0, "sampled", "/run_episode"), "invalid episode"),
        (("oracle", "", "Flee", "val", 0, 0, "sampled", "/run_episode"), "steers by the point goal"),
        (
            (str(folders["outside"] / "secret.replay.json.gz"), "", None, "/open_replay"),
            "outside the folders",
        ),
    ):
        *inputs, api_name = call
        error = client.predict(*inputs, api_name=api_name)[0]
        assert error["visible"] is True and message in error["value"], error
    assert (
        "| oracle |"
        in client.predict("oracle", "", "PointGoal", "val", 1, 0, "sampled", api_name="/run_episode")[2]
    )

    # the roots are not served as files; only gradio's own cache is
    for secret in (folders["models"] / "blind" / "config.json", folders["replay"]):
        with pytest.raises(HTTPError) as refused:
            urllib.request.urlopen(f"{server}gradio_api/file={secret}")
        assert refused.value.code == 403
    assert not outside_hosts(connections), "the demo tried to reach another machine"
