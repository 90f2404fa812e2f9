"""The `navzoo push` command line; the publishing itself is navzoo.hub.push's, imported when it runs."""

from __future__ import annotations

import argparse
import math
import shutil
import tempfile
from pathlib import Path

from navzoo.cli.options import add_device_option, resolve_device
from navzoo.errors import NavzooError
from navzoo.hub.deadline import DEFAULT_TIMEOUT_S
from navzoo.names import ACTION_MODES


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "push",
        help="publish a model or training-run folder to the Hugging Face Hub with a model card",
        description="Evaluate a model on the embedded simulator on the task it was trained for, write its "
        "Hub repository (config.json, model.safetensors, README.md model card, eval.json, replay.mp4 of an "
        "episode, the SPL-by-distance plot for PointGoal, and train_config.yaml + learning curve for "
        "training runs) and upload it in one commit.",
    )
    parser.add_argument(
        "folder",
        help="model folder (config.json + model.safetensors), `navzoo train` run folder, or a zoo name "
        "(its shipped or cached weights, as `navzoo pull` finds them)",
    )
    parser.add_argument("repo_id", help="Hub repository, org/name (created if missing)")
    parser.add_argument("--split", default="val", help="evaluation split (default val)")
    parser.add_argument("--episodes", type=int, default=100, help="evaluation episodes (default 100)")
    parser.add_argument(
        "--mode",
        choices=ACTION_MODES,
        default="sampled",
        help="actions sampled from the policy, as habitat evaluates, or its most likely ones "
        "(default sampled)",
    )
    parser.add_argument(
        "--eval-dir",
        help="reuse this `navzoo eval` output (evaluated with only this model) instead of evaluating",
    )
    parser.add_argument("--license", default="mit", help="license identifier for the card (default mit)")
    parser.add_argument(
        "--base-model", help="Hub id of the model these weights were fine-tuned or converted from"
    )
    parser.add_argument("--private", action="store_true", help="create the repository as private")
    parser.add_argument("--revision", help="branch to push to (created from main if missing)")
    parser.add_argument("--create-pr", action="store_true", help="open a pull request instead of committing")
    parser.add_argument("--token", help="Hub token (default: HF_TOKEN or the one `hf auth login` saved)")
    parser.add_argument("--commit-message", help="commit message (default: a summary of the results)")
    parser.add_argument(
        "--out",
        help="keep a copy of the repository folder here, written once it is complete (default: none); a "
        "new or empty folder unless --overwrite",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="write into --out even if it holds files (files of the same names are replaced; nothing else "
        "is deleted)",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="write the folder (needs --out) but do not upload"
    )
    parser.add_argument(
        "--timeout",
        type=_seconds,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help="give up on a Hub request that makes no progress (no connection, no answer, no bytes sent) "
        f"for this long (default {DEFAULT_TIMEOUT_S:g}); downloads keep huggingface_hub's "
        "HF_HUB_ETAG_TIMEOUT and HF_HUB_DOWNLOAD_TIMEOUT",
    )
    add_device_option(parser, "where the evaluation runs")
    parser.set_defaults(run=_run)


def _seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not seconds > 0 or math.isinf(seconds):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return seconds


def _run(args) -> None:
    from navzoo.hub.pull import pull
    from navzoo.hub.push import _commit_message, check_repo_id, upload, write_repo_folder
    from navzoo.storage.destination import check_destination

    if args.dry_run and not args.out:
        raise NavzooError("--dry-run only writes the repository folder: pass --out DIR to say where")
    check_repo_id(args.repo_id)
    folder = pull(args.folder)
    if args.out:
        read = [folder, *([args.eval_dir] if args.eval_dir else [])]
        check_destination(args.out, overwrite=args.overwrite, sources=read)
    # Written whole in a folder of its own first: a failure leaves nothing behind in --out.
    staging = Path(tempfile.mkdtemp(prefix="navzoo-push-"))
    try:
        write_repo_folder(
            folder,
            staging,
            args.repo_id,
            split=args.split,
            episodes=args.episodes,
            mode=args.mode,
            eval_dir=args.eval_dir,
            license=args.license,
            base_model=args.base_model,
            device=resolve_device(args.device),
        )
        names = sorted(p.name for p in staging.iterdir())
        if args.out:
            _keep(staging, Path(args.out))
            print(f"wrote {args.out}: {', '.join(names)}")
        if args.dry_run:
            return
        info = upload(
            staging,
            args.repo_id,
            private=args.private,
            revision=args.revision,
            create_pr=args.create_pr,
            token=args.token,
            commit_message=args.commit_message or _commit_message(staging),
            timeout=args.timeout,
        )
        print(f"pushed: {info.pr_url or info.commit_url}")
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _keep(staging: Path, out: Path) -> None:
    """Copy the complete repository folder into `out`, replacing files of the same names only."""
    out.mkdir(parents=True, exist_ok=True)
    for file in staging.iterdir():
        shutil.copyfile(file, out / file.name)
