"""The demo's bounds: replay files past MAX_STEPS, MAX_RESOLUTION or MAX_REPLAY_BYTES are refused before
anything is built, steps are rendered when shown (a few kept), paths are shown inside the demo's folders,
and one slow request does not hold up the others. Also against a served demo, through gradio_client."""

import dataclasses
import gzip
import os
import threading
import time

import numpy as np
import pytest

import navzoo
import navzoo.evaluation.replay
from navzoo.agents.baselines import BASELINES, make_baseline
from navzoo.errors import ConfigError, ReplayError, UnknownModelError
from navzoo.evaluation import evaluate
from navzoo.evaluation.replay import load_replay, make_replay, observe_steps, render_replay, save_replay
from navzoo.models.weights import save_pretrained
from navzoo.sim import BatchSim, SimConfig
from tests.support import free_port

gradio_client = pytest.importorskip(
    "gradio_client", reason="the demo needs gradio: pip install 'navzoo[demo]'"
)

import navzoo.evaluation.replay_view  # noqa: E402
from navzoo.demo import app as demo_app  # noqa: E402
from navzoo.demo.episodes import AgentEntry, sim_config  # noqa: E402
from navzoo.demo.sources import MAX_REPLAY_BYTES, MAX_RESOLUTION, MAX_STEPS, Sources  # noqa: E402
from navzoo.evaluation.replay_view import FRAME_CACHE, ReplayView  # noqa: E402

PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
MEMORY_MARGIN = 200 << 20  # what the served demo may grow by while refusing a file


pytestmark = pytest.mark.usefixtures("one_thread_module")


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """A --models root with a tiny blind model, a --replays root with an oracle replay of val episode 0."""
    base = tmp_path_factory.mktemp("bounds")
    models, replays = base / "models", base / "replays"
    save_pretrained(navzoo.create_model("pointnav-blind", hidden_size=16), models / "blind")
    config = SimConfig(split="val", num_envs=1, resolution=(64, 64), scene_families=("apartment-s",))
    sim = BatchSim(config)
    result = evaluate(sim, make_baseline("oracle", sim), 1, progress=False)[0]
    replay = save_replay(replays / "oracle" / "episode-0.replay.json.gz", make_replay(sim, result, "oracle"))
    sim.close()
    return {"base": base, "models": models, "replays": replays, "replay": replay}


@pytest.fixture
def demo(folders):
    return demo_app.Demo(models=[folders["models"]], replays=[folders["replays"]])


def crafted(folders, path, steps: int, resolution=(64, 64), sensors=("depth",)):
    """The saved oracle replay made `steps` long (standing still) with these cameras, written to `path`."""
    saved = load_replay(folders["replay"])
    replay = dataclasses.replace(
        saved,
        sim_config=saved.sim_config.replace(resolution=resolution, sensors=sensors),
        positions=np.repeat(saved.positions[:1], steps + 1, axis=0),
        headings=np.repeat(saved.headings[:1], steps + 1),
        actions=np.full(steps, 2, dtype=np.int64),  # turn_left: no step moves the agent
        rewards=np.zeros(steps, dtype=np.float32),
        values=None,
        action_probs=None,
    )
    return save_replay(path, replay)


def gzip_bomb(path, size: int):
    """A gzip file of a replay's first bytes and then `size` spaces: a few hundred KB on disk."""
    with gzip.open(path, "wb", compresslevel=9) as f:
        f.write(b'{"format": "navzoo-replay", "format_version": 1, "agent": "')
        chunk = b" " * (1 << 20)
        for _ in range(size >> 20):
            f.write(chunk)
        f.write(b'"}')
    return path


def never_built(monkeypatch):
    """Fail the test if a replay's arrays are built (the bounds are checked before)."""
    monkeypatch.setattr(
        navzoo.evaluation.replay, "_replay_from_dict", lambda *_: pytest.fail("the replay was built")
    )


# --- each bound ---------------------------------------------------------------------------------------
def test_steps_are_bounded(demo, folders, tmp_path, monkeypatch):
    longest = crafted(folders, tmp_path / "longest.replay.json.gz", MAX_STEPS)
    assert demo.open(None, None, str(longest))[0].num_steps == MAX_STEPS
    too_long = crafted(folders, tmp_path / "long.replay.json.gz", MAX_STEPS + 1)
    assert load_replay(too_long).num_steps == MAX_STEPS + 1  # the library reads it when not bounded
    never_built(monkeypatch)
    with pytest.raises(ReplayError, match=rf"has {MAX_STEPS + 1} steps; at most {MAX_STEPS} are shown"):
        demo.open(None, None, str(too_long))


def test_camera_resolution_is_bounded(demo, folders, tmp_path, monkeypatch):
    largest = crafted(folders, tmp_path / "largest.replay.json.gz", 3, (64, MAX_RESOLUTION))
    (view,) = demo.open(None, None, str(largest))
    assert view.observation_images(3)["depth"].shape == (64, MAX_RESOLUTION, 3)
    blind = crafted(folders, tmp_path / "blind.replay.json.gz", 3, (1024, 1024), sensors=())
    assert demo.open(None, None, str(blind))[0].blind  # no camera to render: shown with a small one
    too_large = crafted(folders, tmp_path / "large.replay.json.gz", 3, (64, MAX_RESOLUTION + 1))
    never_built(monkeypatch)
    with pytest.raises(ReplayError, match=rf"has 64x{MAX_RESOLUTION + 1} cameras; at most 256x256"):
        demo.open(None, None, str(too_large))


def test_decompressed_size_is_bounded(demo, folders, tmp_path, monkeypatch):
    never_built(monkeypatch)
    bomb = gzip_bomb(tmp_path / "bomb.replay.json.gz", 2 * MAX_REPLAY_BYTES)
    assert bomb.stat().st_size < 10_000
    with pytest.raises(ReplayError, match=r"decompresses to more than 1 MiB, the most read here"):
        demo.open(None, None, str(bomb))
    with pytest.raises(ReplayError, match=r"more than 0.5 MiB"):
        load_replay(bomb, max_bytes=MAX_REPLAY_BYTES // 2)


def test_deeply_nested_json_is_refused(tmp_path):
    path = tmp_path / "nested.replay.json.gz"
    path.write_bytes(gzip.compress(b"[" * 200_000))
    with pytest.raises(ReplayError, match="not a gzip-compressed JSON replay"):
        load_replay(path)


def test_a_model_with_larger_cameras_is_refused_before_running():
    large = navzoo.create_model("bps-se-resnet9", resolution=(260, 260), hidden_size=16, base_planes=8)
    with pytest.raises(ConfigError, match=r"resolution=\(260, 260\).*up to 256x256 in the demo"):
        sim_config(AgentEntry("large", "large", large), "PointGoal", "val")


# --- rendering when shown -----------------------------------------------------------------------------
def test_steps_are_rendered_when_shown_and_few_are_kept(folders, monkeypatch):
    replay = load_replay(folders["replay"])
    calls = []

    def counted(sim, shown, steps):
        calls.append(list(steps))
        return observe_steps(sim, shown, steps)

    monkeypatch.setattr(navzoo.evaluation.replay_view, "observe_steps", counted)
    view = ReplayView(replay)
    assert calls == []  # nothing rendered up front
    first = view.observation_images(3)["depth"]
    view.frame(3)
    assert calls == [[3]]  # rendered once, then kept
    everything = render_replay(replay)["depth"]
    for step in range(FRAME_CACHE + 4):
        view.observation_images(step)
    assert len(view._frames) == FRAME_CACHE and calls[-1] == [FRAME_CACHE + 3]
    view.observation_images(0)  # the oldest was dropped: rendered again
    assert calls[-1] == [0]
    # the same picture as rendering every step at once, the 64x64 camera upscaled 4x
    colour = navzoo.evaluation.replay_view._colour("depth", everything[3].numpy())
    np.testing.assert_array_equal(first, np.repeat(np.repeat(colour, 4, 0), 4, 1))


# --- paths shown inside the demo's folders -------------------------------------------------------------
def test_choices_and_messages_show_paths_inside_the_folders(demo, folders, tmp_path):
    base = str(folders["base"])
    choices = demo.model_choices() + demo.replay_choices()
    assert ("models/blind (folder)", "models/blind") in choices
    assert ("replays/oracle/episode-0.replay.json.gz",) * 2 in choices
    assert not any(base in label or base in value for label, value in choices)

    def message(call, *args) -> str:
        with pytest.raises((ReplayError, UnknownModelError)) as raised:
            call(*args)
        assert base not in str(raised.value) and str(tmp_path) not in str(raised.value)
        return str(raised.value)

    assert "replays/oracle/missing.replay.json.gz does not exist" in message(
        demo.open, "replays/oracle/missing.replay.json.gz"
    )
    assert "(--replays: replays); refused" in message(demo.open, "elsewhere/x.replay.json.gz")
    assert "(--models: models); refused" in message(demo.run, "/etc", None, "PointGoal", "val", 0, 0)
    damaged = folders["replays"] / "damaged.replay.json.gz"
    damaged.write_bytes(gzip.compress(b'{"format": "navzoo-replay", "format_version": 1}'))
    try:
        assert message(demo.open, str(damaged)).startswith("replays/damaged.replay.json.gz is a damaged")
    finally:
        damaged.unlink()
    upload = crafted(folders, tmp_path / "mine.replay.json.gz", 3, (512, 512))
    assert message(demo.open, None, None, str(upload)).startswith("the uploaded mine.replay.json.gz has")
    # messages from the model loaders name files by full path; the page shows them inside the folders
    config = folders["models"] / "blind" / "config.json"
    assert demo.sources.relative(f"{config} is damaged") == "models/blind/config.json is damaged"


def test_folders_with_one_name_are_told_apart(folders, tmp_path):
    other = tmp_path / "elsewhere" / "replays"
    crafted(folders, other / "still.replay.json.gz", 4)
    sources = Sources.from_folders(replays=[folders["replays"], other])
    assert sources.replay_files() == [
        "replays/oracle/episode-0.replay.json.gz",
        "replays-2/still.replay.json.gz",
    ]
    assert sources.open_replay("replays-2/still.replay.json.gz").num_steps == 4
    assert sources.open_replay("replays/oracle/episode-0.replay.json.gz").num_steps > 4


# --- the served demo ----------------------------------------------------------------------------------
def resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE_SIZE


class PeakMemory:
    """The most resident memory of this process (the served demo's too) while the block runs."""

    def __enter__(self):
        self.before = self.peak = resident_bytes()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self):
        while not self._done.wait(0.005):
            self.peak = max(self.peak, resident_bytes())

    def __exit__(self, *exc):
        self._done.set()
        self._thread.join()
        self.peak = max(self.peak, resident_bytes())

    @property
    def growth(self) -> int:
        return self.peak - self.before


@pytest.fixture
def server(folders, tmp_path, monkeypatch):
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio"))
    app = demo_app.build_app(models=[folders["models"]], replays=[folders["replays"]])
    port = free_port()
    demo_app.launch(app, port=port, prevent_thread_lock=True, quiet=True)
    yield f"http://127.0.0.1:{port}/"
    app.close()


def test_served_demo_refuses_files_past_the_bounds_quickly(server, folders, tmp_path):
    """A 7 KB replay asking for 150 steps at 512x512 once took 20-31 s and 2.2 GB; a 256 MiB gzip bomb
    would be read whole. Both are refused in seconds, the server's memory flat, and served files keep
    playing afterwards."""
    client = gradio_client.Client(server, verbose=False, analytics_enabled=False)
    large = crafted(folders, folders["replays"] / "large.replay.json.gz", 150, (512, 512))
    bomb = gzip_bomb(tmp_path / "bomb.replay.json.gz", 256 << 20)
    assert large.stat().st_size < 20_000 and bomb.stat().st_size < 2 * MAX_REPLAY_BYTES
    try:
        for inputs, expected in (
            (("", "", gradio_client.handle_file(str(large))), "has 512x512 cameras; at most 256x256"),
            (("replays/large.replay.json.gz", "", None), "has 512x512 cameras; at most 256x256"),
            (("", "", gradio_client.handle_file(str(bomb))), "decompresses to more than 1 MiB"),
        ):
            with PeakMemory() as memory:
                start = time.perf_counter()
                error = client.predict(*inputs, api_name="/open_replay")[0]
                seconds = time.perf_counter() - start
            assert error["visible"] is True and expected in error["value"], error
            assert str(tmp_path) not in error["value"] and str(folders["base"]) not in error["value"]
            assert seconds < 5, f"refusing {inputs} took {seconds:.1f} s"
            assert memory.growth < MEMORY_MARGIN, f"the server grew by {memory.growth >> 20} MiB"
    finally:
        large.unlink()
    opened = client.predict("replays/oracle/episode-0.replay.json.gz", "", None, api_name="/open_replay")
    assert opened[0]["visible"] is False and "| oracle |" in opened[2]


def test_a_slow_run_does_not_hold_up_others(server, folders, monkeypatch):
    """Two episode runs go on at once, and replays open and steps draw while they do."""
    running, release = threading.Semaphore(0), threading.Event()

    def slow_run(self, *args):
        running.release()
        release.wait(30)
        return self.open("replays/oracle/episode-0.replay.json.gz")

    monkeypatch.setattr(demo_app.Demo, "run", slow_run)
    clients = [gradio_client.Client(server, verbose=False, analytics_enabled=False) for _ in range(3)]
    try:
        runs = [
            c.submit("oracle", "", "PointGoal", "val", 0, 0, "sampled", api_name="/run_episode")
            for c in clients[:2]
        ]
        for _ in runs:
            assert running.acquire(timeout=20), "the second run waited for the first"
        start = time.perf_counter()
        opened = clients[2].predict(
            "replays/oracle/episode-0.replay.json.gz", "", None, api_name="/open_replay"
        )
        assert "| oracle |" in opened[2] and time.perf_counter() - start < 10
        assert not any(run.done() for run in runs)
    finally:
        release.set()
    for run in runs:
        assert "| oracle |" in run.result(timeout=30)[2]


def test_downloads_do_not_hold_the_run_slots(server, monkeypatch):
    """Two visitors picking zoo models not downloaded yet get their run slots back within FETCH_WAIT_S,
    told to press Run again; a third visitor's run goes on while the downloads do, and once a download is
    done the model runs."""
    fetching, release = threading.Semaphore(0), threading.Event()
    real_load = demo_app.load_agent

    def slow_download(sources, choice, device="cpu"):
        if choice in BASELINES:
            return real_load(sources, choice, device)
        fetching.release()
        release.wait(60)
        return AgentEntry(choice, "oracle")  # stands in for the downloaded model

    monkeypatch.setattr(Sources, "local_zoo_models", lambda self: [])
    monkeypatch.setattr(demo_app, "load_agent", slow_download)
    first, second = navzoo.list_models(pretrained=True)[:2]
    clients = [gradio_client.Client(server, verbose=False, analytics_enabled=False) for _ in range(3)]
    try:
        waits = [
            c.submit(name, "", "PointGoal", "val", 0, 0, "sampled", api_name="/run_episode")
            for c, name in zip(clients[:2], (first, second), strict=True)
        ]
        for _ in waits:
            assert fetching.acquire(timeout=20), "a download did not start"
        for wait, name in zip(waits, (first, second), strict=True):
            error = wait.result(timeout=demo_app.FETCH_WAIT_S + 15)[0]
            assert error["visible"] is True and f"{name} is still downloading" in error["value"]
            assert "press Run again" in error["value"]
        start = time.perf_counter()
        ran = clients[2].predict("oracle", "", "PointGoal", "val", 0, 0, "sampled", api_name="/run_episode")
        assert "| oracle |" in ran[2] and time.perf_counter() - start < 20
    finally:
        release.set()
    ran = clients[0].predict(first, "", "PointGoal", "val", 0, 0, "sampled", api_name="/run_episode")
    assert ran[0]["visible"] is False and f"| {first} |" in ran[2]
    assert not fetching.acquire(timeout=0), "the model was downloaded twice"
