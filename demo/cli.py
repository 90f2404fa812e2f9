"""`navzoo demo`: the Gradio replay app on this machine (see navzoo.demo.app)."""

import os

from navzoo.cli.options import (
    add_device_option,
    add_episode_options,
    add_threads_option,
    resolve_device,
    set_threads,
)
from navzoo.errors import ConfigError


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="web app: watch an agent navigate, replay saved episodes",
        description="Serve a Gradio app on this machine (no internet needed): run a baseline or a model on "
        "an episode of PointGoal, Flee or Explore and play it back (top-down map, camera views, actions, "
        "values and rewards), two agents side by side, or open replays saved by `navzoo eval --replays K`. "
        "The app reads model folders and replay files only under the folders given here. With "
        "--episodes-file it runs that file's episodes (with --scenes-dir on its scanned meshes); "
        "--scenes-dir is also where it looks for the meshes of replays recorded on scanned meshes.",
    )
    parser.add_argument(
        "--models",
        action="append",
        default=[],
        metavar="DIR",
        help="folder holding model folders or training runs (config.json + model.safetensors); repeatable "
        "(default: none; the zoo and the baselines are always offered)",
    )
    parser.add_argument(
        "--replays",
        action="append",
        default=[],
        metavar="DIR",
        help="folder holding replay files (*.replay.json.gz, e.g. runs/eval/replays); repeatable "
        "(default: none)",
    )
    add_episode_options(parser)
    parser.add_argument("--host", default="127.0.0.1", help="address to serve on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=7860, help="port (default 7860)")
    add_device_option(parser, "where the agents and the simulator run")
    add_threads_option(
        parser,
        "torch threads (one environment's small tensors run fastest on one thread, and much faster than on "
        "several when other work keeps the cores busy)",
        "torch's own choice",
        default=1,
    )
    parser.set_defaults(run=_run)


def _run(args) -> None:
    set_threads(args.threads)
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # read when gradio is imported
    try:
        from .app import build_app, launch
    except ImportError as err:
        hint = f"an install with gradio: pip install 'navzoo[demo]' ({err})"
        raise ConfigError("demo", "navzoo demo", hint) from None
    app = build_app(
        models=args.models,
        replays=args.replays,
        device=resolve_device(args.device),
        scenes_dir=args.scenes_dir,
        scene_dataset=args.scene_dataset,
        episodes_file=args.episodes_file,
    )
    try:
        launch(app, host=args.host, port=args.port)
    except OSError as err:  # gradio: the port is taken
        raise ConfigError("port", args.port, f"a free port ({err})") from None
