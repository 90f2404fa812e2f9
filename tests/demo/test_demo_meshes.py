"""The demo on scanned meshes: replays of mesh episodes open and play with `navzoo demo --scenes-dir` (and
only inside it), and `--episodes-file` runs a file's episodes on its meshes. A two-storey house the tests
build (tests/evaluation/stairs_house.py); the app's functions called directly, then the served app through
gradio_client."""

import dataclasses

import numpy as np
import pytest
from PIL import Image

from navzoo.agents.baselines import make_baseline
from navzoo.cli.main import build_parser
from navzoo.errors import ConfigError, ReplayError
from navzoo.evaluation import evaluate
from navzoo.evaluation.replay import load_replay, make_replay, render_replay, save_replay
from navzoo.evaluation.replay_view import _colour
from navzoo.sim import BatchSim, SimConfig
from tests.evaluation.stairs_house import MESH, stairs_house
from tests.support import free_port

gradio_client = pytest.importorskip(
    "gradio_client", reason="the demo needs gradio: pip install 'navzoo[demo]'"
)
from navzoo.demo import app as demo_app  # noqa: E402
from navzoo.demo import player  # noqa: E402

REPLAY = "replays/oracle/episode-0.replay.json.gz"  # as the page names it

pytestmark = pytest.mark.usefixtures("one_thread_module")


@pytest.fixture(scope="module")
def house(tmp_path_factory):
    """The house, an oracle replay of its first episode (down the stairs) in a --replays root, and a
    crafted replay whose mesh lies outside its scenes folder; navmeshes cached beside them."""
    base = tmp_path_factory.mktemp("demo-house")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("NAVZOO_NAVMESH_CACHE", str(base / "navmeshes"))
        fields = stairs_house(base)
        sim = BatchSim(SimConfig(split="val", num_envs=1, resolution=(32, 32), **fields))
        result = evaluate(sim, make_baseline("oracle", sim), 1, progress=False)[0]
        replay = make_replay(sim, result, "oracle")
        sim.close()
        saved = save_replay(base / "replays" / "oracle" / "episode-0.replay.json.gz", replay)
        escaping = dataclasses.replace(
            replay,
            episode=dataclasses.replace(replay.episode, scene_id=f"{fields['scenes_dir']}/../../x.ply"),
        )
        yield {
            **fields,
            "base": base,
            "replays": base / "replays",
            "replay": saved,
            "result": result,
            "escaping": save_replay(base / "escaping.replay.json.gz", escaping),
        }


def test_a_mesh_replay_opens_and_plays_with_the_scenes_folder(house):
    demo = demo_app.Demo(replays=[house["replays"]], scenes_dir=house["scenes_dir"])
    (view,) = demo.open(REPLAY)
    assert view.replay.metrics == house["result"].metrics() and view.replay.scene_name == MESH
    last = view.num_steps
    outputs = player.step_outputs([view], last)
    np.testing.assert_array_equal(outputs[0], view.map_image(last))
    expected = _colour("depth", render_replay(load_replay(house["replay"]), [last])["depth"][0].numpy())
    np.testing.assert_array_equal(view.observation_images(last)["depth"][::8, ::8], expected)  # upscaled 8x
    table = player.metrics_markdown([view])
    assert f"| scene | {MESH} |" in table and str(house["base"]) not in table
    (uploaded,) = demo.open(None, None, str(house["replay"]))  # an upload is placed in the scenes folder too
    assert uploaded.replay.episode.scene_id == view.replay.episode.scene_id


def test_mesh_replays_open_only_inside_a_scenes_folder(house, tmp_path):
    replays = [house["replays"]]
    with pytest.raises(ReplayError, match=rf"{REPLAY} was recorded on the scanned mesh {MESH}.*--scenes-dir"):
        demo_app.Demo(replays=replays).open(REPLAY)
    demo = demo_app.Demo(replays=replays, scenes_dir=house["scenes_dir"])
    with pytest.raises(ReplayError, match="outside its scenes folder"):
        demo.open(None, None, str(house["escaping"]))
    oriented = load_replay(house["replay"])
    oriented = dataclasses.replace(
        oriented, sim_config=oriented.sim_config.replace(scene_dataset="/x/house.scene_dataset_config.json")
    )
    with pytest.raises(ReplayError, match=r"house\.scene_dataset_config\.json.*--scene-dataset FILE"):
        demo.open(None, None, str(save_replay(tmp_path / "oriented.replay.json.gz", oriented)))
    (tmp_path / "empty").mkdir()
    elsewhere = demo_app.Demo(replays=replays, scenes_dir=tmp_path / "empty")
    with pytest.raises(ReplayError, match=rf"mesh .*empty/{MESH} .*does not exist") as missing:
        elsewhere.open(REPLAY)
    shown = elsewhere.sources.relative(str(missing.value))
    assert f"empty/{MESH}" in shown and str(tmp_path) not in shown  # the page names no server path


def test_the_demo_runs_an_episodes_file_on_its_meshes(house):
    demo = demo_app.Demo(episodes_file=house["episodes_file"], scenes_dir=house["scenes_dir"])
    (view,) = demo.run("oracle", None, "PointGoal", "val", 1, 0)  # the second episode: up the stairs
    fields = {key: house[key] for key in ("episodes_file", "scenes_dir")}
    sim = BatchSim(SimConfig(split="val", num_envs=2, sensors=(), **fields))
    expected = evaluate(sim, make_baseline("oracle", sim), 2, progress=False)[1]
    sim.close()
    assert view.replay.metrics == expected.metrics() and view.replay.episode.episode_id == "up"
    np.testing.assert_array_equal(view.replay.heights, expected.heights)
    with pytest.raises(ConfigError, match=r"0 \.\. 1 \(episodes of stairs\.json\.gz\)"):
        demo.run("oracle", None, "PointGoal", "val", 2, 0)
    with pytest.raises(ConfigError, match="--scene-dataset"):
        demo_app.Demo(scene_dataset=house["episodes_file"])  # without --scenes-dir


def test_cli_takes_the_episodes_and_scene_options():
    argv = ["demo", "--episodes-file", "e.json.gz", "--scenes-dir", "d", "--scene-dataset", "c.json"]
    args = build_parser("demo").parse_args(argv)
    assert (args.episodes_file, args.scenes_dir, args.scene_dataset) == ("e.json.gz", "d", "c.json")


@pytest.fixture
def server(house, tmp_path, monkeypatch):
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio"))
    monkeypatch.setenv("NAVZOO_NAVMESH_CACHE", str(house["base"] / "navmeshes"))
    app = demo_app.build_app(
        replays=[house["replays"]], scenes_dir=house["scenes_dir"], episodes_file=house["episodes_file"]
    )
    port = free_port()
    demo_app.launch(app, port=port, prevent_thread_lock=True, quiet=True)
    yield f"http://127.0.0.1:{port}/"
    app.close()


def test_served_app_opens_mesh_replays_and_runs_mesh_episodes(server, house):
    client = gradio_client.Client(server, verbose=False, analytics_enabled=False)
    error, slider, metrics, *_ = client.predict(REPLAY, "", None, api_name="/open_replay")
    assert error["visible"] is False and slider["maximum"] == house["result"].num_steps
    assert f"| scene | {MESH} |" in metrics
    error, map_a, view_a, steps_a, *_ = client.predict(slider["maximum"], api_name="/show_step")
    assert error["visible"] is False and "(end)" in steps_a
    for picture in (map_a, view_a):
        with Image.open(picture) as image:
            assert image.format == "PNG" and image.width > 200
    ran = client.predict("oracle", "", "PointGoal", "val", 0, 0, "sampled", api_name="/run_episode")
    assert ran[0]["visible"] is False and "| oracle |" in ran[2] and "| episode | val #0 |" in ran[2]
    upload = gradio_client.handle_file(str(house["escaping"]))
    error = client.predict("", "", upload, api_name="/open_replay")[0]
    assert error["visible"] is True and "outside its scenes folder" in error["value"]
