"""What the demo may open: baselines, zoo models with weights (shipped with navzoo, cached, or fetched on
first use: habitat's releases, Hub repositories), and model folders and replay files under the folders it
was started with. Every path a page sends must resolve (symlinks followed) inside one of those folders, or
it is refused."""

import os
from dataclasses import dataclass
from pathlib import Path

from navzoo.errors import ConfigError, ReplayError, UnknownModelError
from navzoo.hub.weights import CONFIG_NAME, WEIGHTS_NAME
from navzoo.replay import SUFFIX
from navzoo.zoo import list_models

DEFAULT_MODEL = "navzoo-pointnav-depth"  # navzoo's own depth agent, the first choice wherever it is local
FALLBACK_MODEL = "goal-follower"
MAX_DEPTH = 4  # folder levels searched below a root: run folders, not whole disks


@dataclass(frozen=True)
class Sources:
    models: tuple[Path, ...] = ()  # --models roots, resolved
    replays: tuple[Path, ...] = ()  # --replays roots, resolved

    @classmethod
    def from_folders(cls, models=(), replays=()) -> "Sources":
        return cls(_roots(models, "--models"), _roots(replays, "--replays"))

    def zoo_models(self) -> list[str]:
        """Zoo entries with weights: shipped, cached, or fetched when first chosen."""
        return list_models(pretrained=True)

    def local_zoo_models(self) -> list[str]:
        """The zoo entries that load without the network."""
        return list_models(local=True)

    def model_folders(self) -> list[str]:
        """Folders with config.json and model.safetensors under the model roots (absolute paths)."""
        return [str(path) for path in _walk(self.models) if _is_model(path, self.models)]

    def default_model(self) -> str:
        return DEFAULT_MODEL if DEFAULT_MODEL in self.local_zoo_models() else FALLBACK_MODEL

    def model_folder(self, text: str) -> Path:
        """The model folder `text` names, if it lies inside a model root; UnknownModelError otherwise."""
        path = _inside(text, self.models, "--models", UnknownModelError)
        if not _is_model(path, self.models):
            raise UnknownModelError(
                f"{text!r} is not a model folder: it needs {CONFIG_NAME} and {WEIGHTS_NAME} (inside the "
                "--models folders)"
            )
        return path

    def replay_files(self) -> list[str]:
        """The `navzoo eval --replays` files under the replay roots."""
        found = []
        for folder in _walk(self.replays):
            found += sorted(str(p) for p in folder.glob(f"*{SUFFIX}") if _safe(p, self.replays))
        return found

    def short_name(self, path: str | Path) -> str:
        """`path` as <root folder name>/<path inside the root>, for lists shown to people."""
        path = Path(path)
        for root in (*self.models, *self.replays):
            if path.is_relative_to(root):
                return str(Path(root.name) / path.relative_to(root))
        return str(path)

    def replay_file(self, text: str) -> Path:
        """The replay file `text` names, if it lies inside a replay root; ReplayError otherwise."""
        path = _inside(text, self.replays, "--replays", ReplayError)
        if not path.is_file():
            raise ReplayError(f"replay file {text} does not exist")
        return path


def _roots(folders, flag: str) -> tuple[Path, ...]:
    roots = []
    for folder in folders:
        path = Path(folder).expanduser().resolve()
        if not path.is_dir():
            raise ConfigError(flag, str(folder), "an existing folder")
        roots.append(path)
    return tuple(dict.fromkeys(roots))


def _walk(roots: tuple[Path, ...]):
    """Each root and its sub-folders down to MAX_DEPTH, without following symlinked folders out of it."""
    for root in roots:
        for folder, subfolders, _ in os.walk(root):
            depth = len(Path(folder).relative_to(root).parts)
            subfolders[:] = (
                sorted(d for d in subfolders if not d.startswith(".")) if depth < MAX_DEPTH else []
            )
            yield Path(folder)


def _is_model(folder: Path, roots: tuple[Path, ...]) -> bool:
    """Both weight files present, and neither a symlink to somewhere outside the roots."""
    files = (folder / CONFIG_NAME, folder / WEIGHTS_NAME)
    return all(f.is_file() and _safe(f, roots) for f in files)


def _safe(path: Path, roots: tuple[Path, ...]) -> bool:
    resolved = path.resolve()
    return any(resolved.is_relative_to(root) for root in roots)


def _inside(text: str, roots: tuple[Path, ...], flag: str, error: type[Exception]) -> Path:
    """`text` resolved (relative paths from the working folder, symlinks followed), if inside a root."""
    if not roots:
        raise error(f"no folders were given with {flag}: start `navzoo demo {flag} DIR` to open {text!r}")
    if not isinstance(text, str) or not text.strip() or "\x00" in text:
        raise error(f"{text!r} is not a path")
    path = Path(text).expanduser().resolve()
    if not any(path.is_relative_to(root) for root in roots):
        shown = ", ".join(str(r) for r in roots)
        raise error(f"{text!r} is outside the folders this demo may read ({flag}: {shown}); refused")
    return path
