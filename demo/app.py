"""The Gradio replay app: run a baseline or a model on an episode (or open saved replays), then play it back.
Episodes come from navzoo's splits or from a habitat episodes file, on navzoo's scenes or scanned meshes.

`Demo` holds what the page's events call, as plain methods and functions that tests call directly;
`build_app` lays out the page and wires the events (each with an api_name, so gradio_client can call them);
`launch` serves it on this machine with nothing fetched from the internet.
"""

import dataclasses
import html
import logging
import os
import threading
from collections import OrderedDict
from functools import partial, wraps
from pathlib import Path

# Before gradio is imported: no telemetry or version check (the demo works offline).
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import gradio as gr

from navzoo.agents.baselines import BASELINES
from navzoo.demo.episodes import TASKS, AgentEntry, file_episodes, load_agent, run_episode
from navzoo.demo.fetches import Fetches
from navzoo.demo.player import last_step, metrics_markdown, step_outputs, titles
from navzoo.demo.sources import MAX_REPLAY_BYTES, Sources
from navzoo.errors import NavzooError, ReplayError
from navzoo.evaluation import unique_labels
from navzoo.evaluation.replay import Replay
from navzoo.evaluation.replay_view import ReplayView
from navzoo.names import ACTION_MODES
from navzoo.sim.config import SPLITS, SimConfig

log = logging.getLogger(__name__)

MODEL_CACHE = 2  # loaded policies kept between runs
NONE = ""  # the "no second agent / replay" choice
TICK_SECONDS = 0.25  # playback: the slider moves on every tick
PLAY, PAUSE = "▶ Play", "⏸ Pause"
# Events served at once, through gradio's queue. Running an episode takes seconds of CPU, so only a few
# run together and the rest wait; opening a replay and drawing a step take milliseconds and have their
# own slots, so waiting runs never hold up the player. Past QUEUE_SIZE waiting events, new ones are turned
# away with "queue full" rather than piling up.
RUNS_AT_ONCE = 2
OPENS_AT_ONCE = 4
# Zoo models not cached yet download on threads of their own (navzoo.demo.fetches), not in the run slots:
# a run waits FETCH_WAIT_S for its model, then frees its slot and asks the visitor to press Run again.
FETCHES_AT_ONCE = 2
FETCH_WAIT_S = 3.0
DRAWS_AT_ONCE = 8
QUEUE_SIZE = 64
# System fonts only: the default theme's web fonts would be one more thing to fetch.
THEME = gr.Theme(
    font=["ui-sans-serif", "system-ui", "sans-serif"], font_mono=["ui-monospace", "Consolas", "monospace"]
)
CSS = """
.navzoo-error { border: 2px solid #c0392b; border-radius: 6px; padding: 4px 12px; background: #fdecea; }
.navzoo-steps table { font-family: ui-monospace, monospace; font-size: 13px; }
.navzoo-steps tr.current { background: #ffe08a; font-weight: 600; }
"""


class Demo:
    """What the page does, without the page: load agents, run episodes, open replays."""

    def __init__(
        self,
        models=(),
        replays=(),
        device: str = "cpu",
        fetch_wait: float | None = None,
        *,
        scenes_dir=None,
        scene_dataset=None,
        episodes_file=None,
    ):
        """`fetch_wait`: seconds a run waits for a zoo model to download before it answers that the model
        is still downloading (None: until the download is done). `episodes_file`: the habitat PointNav
        episodes to run instead of a split's, on the scanned meshes of `scenes_dir` (oriented by
        `scene_dataset`) where given; replays on scanned meshes open with `scenes_dir` alone."""
        self.sources = Sources.from_folders(models, replays, scenes_dir, scene_dataset, episodes_file)
        if self.sources.episodes_file is not None:  # read now: a bad file is refused before serving
            file_episodes(SimConfig(split="val", num_envs=1, **self.sources.episode_fields()))
        self.device = device
        self.fetch_wait = fetch_wait
        self._policies: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        self._fetches: Fetches[AgentEntry] = Fetches(FETCHES_AT_ONCE)

    # --- what there is to choose from ----------------------------------------------------------------
    def model_choices(self) -> list[tuple[str, str]]:
        """(label, value) pairs: baselines, zoo models (those not cached yet download when chosen), model
        folders."""
        sources = self.sources
        local = set(sources.local_zoo_models())
        choices = [(f"{name} (baseline)", name) for name in BASELINES]
        choices += [
            (f"{name} (zoo)" if name in local else f"{name} (zoo, downloads when chosen)", name)
            for name in sources.zoo_models()
        ]
        choices += [(f"{name} (folder)", name) for name in sources.model_folders()]
        return choices

    def replay_choices(self) -> list[tuple[str, str]]:
        return [(name, name) for name in self.sources.replay_files()]

    # --- running and opening -------------------------------------------------------------------------
    def load_agent(self, choice: str) -> AgentEntry:
        """`load_agent`, keeping the last few policies (a folder is reloaded when its files change)."""
        try:
            key = _cache_key(self.sources, choice)
        except NavzooError:
            key = None  # not a model: load_agent below says what is wrong with it
        if key is None:
            return load_agent(self.sources, choice, self.device)
        with self._lock:
            if key in self._policies:
                self._policies.move_to_end(key)
                label, source, policy = self._policies[key]
                return AgentEntry(label, source, policy)
        if key[0] == "zoo" and choice not in self.sources.local_zoo_models():
            fetch = partial(load_agent, self.sources, choice, self.device)
            agent = self._fetches.get(key, choice, fetch, self.fetch_wait)
        else:
            agent = load_agent(self.sources, choice, self.device)
        with self._lock:
            self._policies[key] = (agent.label, agent.source, agent.policy)
            while len(self._policies) > MODEL_CACHE:
                self._policies.popitem(last=False)
        return agent

    def run(
        self, model: str, second: str | None, task: str, split: str, episode=None, seed=0, mode="sampled"
    ) -> list[ReplayView]:
        """Run one or two agents on the same episode; a view of each."""
        chosen = [c for c in (model, second) if c] or [model]  # nothing chosen: load_agent says so
        agents = unique_labels([self.load_agent(c) for c in chosen])
        fields = self.sources.episode_fields()
        replays = [run_episode(a, task, split, episode, seed, mode, self.device, **fields) for a in agents]
        return [_view(r, self.device) for r in replays]

    def open(
        self, replay: str | None, second: str | None = None, upload: str | None = None
    ) -> list[ReplayView]:
        """Views of saved replays: files under the --replays roots, or an uploaded file (shown first); each
        refused past the demo's bounds before anything is rendered."""
        replays = []
        if upload:  # gradio only hands over files that were uploaded to it, kept in its own cache
            replays.append(self.sources.open_file(Path(upload), f"the uploaded {Path(upload).name}"))
        replays += [self.sources.open_replay(c) for c in (replay, second) if c]
        if not replays:
            raise ReplayError("no replay chosen: pick a replay file or upload one (.replay.json.gz)")
        return [_view(r, self.device) for r in replays[:2]]


def _cache_key(sources: Sources, choice) -> tuple | None:
    """What identifies a loaded policy; None for a baseline or no choice."""
    if not isinstance(choice, str) or not choice.strip() or choice in BASELINES:
        return None
    if choice in sources.zoo_models():
        return ("zoo", choice)
    folder = sources.model_folder(choice)
    stamps = tuple((folder / name).stat().st_mtime_ns for name in ("config.json", "model.safetensors"))
    return ("folder", str(folder), stamps)


def _view(replay: Replay, device: str) -> ReplayView:
    """A view of a replay, its steps rendered when shown."""
    # Re-rendered on the demo's device, whatever the file says (compiling would take half a minute).
    config = replay.sim_config.replace(compile=False, device="cpu")
    return ReplayView(dataclasses.replace(replay, sim_config=config), device=device)


# --- the page ---------------------------------------------------------------------------------------
def build_app(
    models=(), replays=(), device: str = "cpu", *, scenes_dir=None, scene_dataset=None, episodes_file=None
) -> gr.Blocks:
    """The demo page for the model folders under `models` and the replay files under `replays`, running
    the episodes of `episodes_file` (on the scanned meshes of `scenes_dir`) where given (Demo)."""
    demo = Demo(
        models,
        replays,
        device,
        fetch_wait=FETCH_WAIT_S,
        scenes_dir=scenes_dir,
        scene_dataset=scene_dataset,
        episodes_file=episodes_file,
    )
    model_choices, replay_choices = demo.model_choices(), demo.replay_choices()
    episodes = demo.sources.episodes_file
    with gr.Blocks(title="navzoo demo", analytics_enabled=False, delete_cache=(600, 3600)) as app:
        gr.Markdown(
            "# navzoo: watch an agent navigate\nPick an agent, a task and an episode, or open a saved replay "
            "(`navzoo eval --replays K`). The map shows the shortest path (green), the trajectory so far "
            "(dark to bright) and the agent (black); the goal is red, the start blue."
            + ("" if episodes is None else f"\n\nEpisodes: `{episodes.name}`.")
        )
        views = gr.State(None)  # this page's ReplayViews: each renders a step when it is shown
        playing = gr.State(False)
        with gr.Tab("Run an episode"):
            with gr.Row():
                model = gr.Dropdown(
                    model_choices,
                    value=demo.sources.default_model(),
                    label="agent",
                    allow_custom_value=True,
                    elem_id="agent",
                )
                second = gr.Dropdown(
                    [("(none)", NONE), *model_choices],
                    value=NONE,
                    label="second agent, side by side (optional)",
                    allow_custom_value=True,
                    elem_id="second",
                )
                refresh = gr.Button("Rescan folders", scale=0)
            with gr.Row():
                task = gr.Radio(list(TASKS), value="PointGoal", label="task")
                # An episodes file's episodes are the same whatever the split.
                split = gr.Radio(list(SPLITS), value="val", label="split", visible=episodes is None)
                episode = gr.Number(
                    0, precision=0, label="episode (empty: picked by the seed)", elem_id="episode"
                )
                seed = gr.Number(0, precision=0, label="seed")
                mode = gr.Radio(list(ACTION_MODES), value="sampled", label="model actions")
            run = gr.Button("Run episode", variant="primary", elem_id="run-episode")
        with gr.Tab("Open a replay"):
            with gr.Row():
                replay = gr.Dropdown(
                    [("(none)", NONE), *replay_choices],
                    value=replay_choices[0][1] if replay_choices else NONE,
                    label="replay file",
                    allow_custom_value=True,
                )
                second_replay = gr.Dropdown(
                    [("(none)", NONE), *replay_choices],
                    value=NONE,
                    label="second replay, side by side (optional)",
                    allow_custom_value=True,
                )
                upload = gr.File(label="or upload a .replay.json.gz", file_types=[".gz"], type="filepath")
            open_button = gr.Button("Open replay", variant="primary", elem_id="open-replay")
        error = gr.Markdown(visible=False, label="error", elem_classes=["navzoo-error"], elem_id="error")
        with gr.Row():
            play = gr.Button(PLAY, scale=0, elem_id="play")
            speed = gr.Dropdown([1, 2, 5, 10], value=1, label="steps per tick", scale=0, min_width=110)
            slider = gr.Slider(0, 1, value=0, step=1, label="step", elem_id="step")
        timer = gr.Timer(TICK_SECONDS, active=False)
        columns, titles_shown, step_shown = [], [], []
        with gr.Row():
            for letter in "ab":
                with gr.Column(visible=letter == "a") as column:
                    titles_shown.append(gr.Markdown(label=f"title {letter}", elem_id=f"title-{letter}"))
                    with gr.Row():
                        step_shown += [
                            _picture("top-down map", 3, f"map-{letter}"),
                            _picture("camera", 2, f"view-{letter}"),
                        ]
                    step_shown.append(gr.HTML(label=f"steps {letter}", elem_id=f"steps-{letter}"))
                columns.append(column)
        metrics = gr.Markdown(label="metrics", elem_id="metrics")

        loaded = [error, views, slider, metrics, columns[1], *titles_shown, *step_shown, playing, timer, play]

        def stopped() -> tuple:  # fresh updates each time: gradio consumes the dicts it is given
            return False, gr.update(active=False), PLAY

        def show_loaded(new: list[ReplayView]) -> list:
            return [
                gr.update(value="", visible=False),
                new,
                gr.update(minimum=0, maximum=last_step(new), value=0),
                metrics_markdown(new),
                gr.update(visible=len(new) > 1),
                *titles(new),
                *step_outputs(new, 0),
                *stopped(),
            ]

        @_guarded(len(loaded), demo.sources)
        def on_run(model, second, task, split, episode, seed, mode):
            return show_loaded(demo.run(model, second or None, task, split, episode, seed, mode))

        @_guarded(len(loaded), demo.sources)
        def on_open(replay, second_replay, upload):
            return show_loaded(demo.open(replay or None, second_replay or None, upload))

        @_guarded(1 + len(step_shown), demo.sources)
        def on_step(views, step):
            if not views:
                return [gr.update(visible=False), *[gr.update()] * len(step_shown)]
            return [gr.update(visible=False), *step_outputs(views, int(step))]

        @_guarded(5 + len(step_shown), demo.sources)
        def on_tick(views, step, speed, playing):
            if not views or not playing:
                return [gr.update(), *stopped(), gr.update(), *[gr.update()] * len(step_shown)]
            step = min(int(step) + int(speed), last_step(views))
            more = step < last_step(views)  # the timer stops at the last step
            state = (True, gr.update(), PAUSE) if more else stopped()
            return [gr.update(), *state, step, *step_outputs(views, step)]

        def on_play(views, step, playing):
            if not views or playing:
                return [*stopped(), gr.update()]
            restart = int(step) >= last_step(views)  # at the end, play from the start
            return [True, gr.update(active=True), PAUSE, 0 if restart else gr.update()]

        @_guarded(5, demo.sources)
        def on_refresh():
            models_now, replays_now = demo.model_choices(), demo.replay_choices()
            return [
                gr.update(visible=False),
                gr.update(choices=models_now),
                gr.update(choices=[("(none)", NONE), *models_now]),
                gr.update(choices=[("(none)", NONE), *replays_now]),
                gr.update(choices=[("(none)", NONE), *replays_now]),
            ]

        run.click(
            on_run,
            [model, second, task, split, episode, seed, mode],
            loaded,
            api_name="run_episode",
            concurrency_limit=RUNS_AT_ONCE,
        )
        open_button.click(
            on_open,
            [replay, second_replay, upload],
            loaded,
            api_name="open_replay",
            concurrency_limit=OPENS_AT_ONCE,
        )
        slider.input(
            on_step,
            [views, slider],
            [error, *step_shown],
            api_name="show_step",
            trigger_mode="always_last",
            show_progress="hidden",
        )
        play.click(
            on_play, [views, slider, playing], [playing, timer, play, slider], api_visibility="private"
        )
        timer.tick(
            on_tick,
            [views, slider, speed, playing],
            [error, playing, timer, play, slider, *step_shown],
            api_visibility="private",
            trigger_mode="always_last",
        )
        refresh.click(on_refresh, None, [error, model, second, replay, second_replay], api_name="refresh")
    # Every other event (drawing a step, playing, rescanning) may run DRAWS_AT_ONCE times together.
    return app.queue(max_size=QUEUE_SIZE, default_concurrency_limit=DRAWS_AT_ONCE)


def _picture(label: str, scale: int, elem_id: str) -> gr.Image:
    """A picture of the player: PNG, not editable, one height for the map and the views."""
    return gr.Image(label=label, format="png", interactive=False, height=360, scale=scale, elem_id=elem_id)


def _guarded(outputs: int, sources: Sources):
    """Show a navzoo error (a bad model, episode or file) in the page's error box and as a warning, and leave
    every other output as it was; the first output of every guarded event is that box. Paths in the message
    are shown inside the demo's folders, as the page names them."""

    def decorate(fn):
        @wraps(fn)
        def wrapper(*args):
            try:
                return fn(*args)
            except NavzooError as err:
                message = str(err)
            except Exception as err:  # a bug, not bad input: still keep the page (and server) usable
                log.exception("demo event failed")
                message = f"unexpected error ({type(err).__name__}: {err}); the server log has the details"
            message = sources.relative(message)
            gr.Warning(message)
            box = gr.update(value=f"**Error:** {html.escape(message)}", visible=True)
            return [box, *[gr.update()] * (outputs - 1)]

        return wrapper

    return decorate


def launch(app: gr.Blocks, host: str = "127.0.0.1", port: int | None = 7860, **kwargs):
    """Serve `app` on this machine: no share link, no analytics, system fonts, and no folder of ours
    served as files (pictures go through gradio's own cache)."""
    options = {
        "server_name": host,
        "server_port": port,
        "share": False,
        "theme": THEME,
        "css": CSS,
        "allowed_paths": [],
        "max_file_size": 2 * MAX_REPLAY_BYTES,  # gzip is hardly larger than what it holds
        "state_session_capacity": 64,
        "ssr_mode": False,
        "footer_links": ["api"],
    }
    return app.launch(**{**options, **kwargs})
