"""`navzoo pull`: fetch a model into the cache `navzoo.load` reads, and print its folder."""


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "pull",
        help="download a model into the cache navzoo.load reads and print where it is",
        description="Fetch a model ahead of time: a Hub repository's config.json and model.safetensors into "
        "the Hugging Face cache, or one of habitat's released DD-PPO checkpoints (downloaded from habitat's "
        "release folder or NAVZOO_DDPPO_BASE_URL, then converted) into navzoo's cache beside it. Prints "
        "the folder holding the model.",
    )
    parser.add_argument("model", help="zoo name, org/name or hf-hub:org/name[@revision]")
    parser.add_argument("--revision", help="branch, tag or commit of a Hub repository (default main)")
    parser.add_argument(
        "--cache-dir",
        help="cache folder (default: huggingface_hub's HF_HUB_CACHE for Hub repositories, "
        "HF_HOME/navzoo for habitat's releases)",
    )
    parser.set_defaults(run=_run)


def _run(args) -> None:
    from navzoo.hub.pull import pull

    folder = pull(args.model, revision=args.revision, cache_dir=args.cache_dir)
    print(folder)
