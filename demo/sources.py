"""What the demo may open: baselines, zoo models with weights (shipped with navzoo, cached, or fetched on
first use: habitat's releases, Hub repositories), and model folders and replay files under the folders it
was started with. The page names those as <folder name>/<path inside it>, never by server path. Every path
a page sends must resolve (symlinks followed) inside one of those folders, or it is refused.

It also bounds what the demo opens: a replay past MAX_STEPS, MAX_RESOLUTION or MAX_REPLAY_BYTES is refused
before anything is built, since a few kilobytes of gzip can ask for gigabytes of pictures."""

import os
from dataclasses import dataclass
from pathlib import Path

from navzoo.errors import ConfigError, ReplayError, UnknownModelError
from navzoo.evaluation.replay import SUFFIX, Replay, load_replay
from navzoo.models.weights import CONFIG_NAME, WEIGHTS_NAME
from navzoo.sim.config import SimConfig
from navzoo.zoo.loader import list_models

DEFAULT_MODEL = "navzoo-pointnav-depth"  # navzoo's own depth agent, the first choice wherever it is local
FALLBACK_MODEL = "goal-follower"
MAX_DEPTH = 4  # folder levels searched below a root: run folders, not whole disks
MAX_STEPS = SimConfig.max_episode_steps  # 500: evaluation episodes, and the demo's own runs, end by then
MAX_RESOLUTION = 256  # camera side: the zoo's largest, and the size the page shows a view at
MAX_REPLAY_BYTES = 1 << 20  # JSON in a replay file: a 500-step replay of a learned policy is about 100 KB


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
        """Folders with config.json and model.safetensors under the model roots, as the page names them."""
        return [_name(path, self.models) for path in _walk(self.models) if _is_model(path, self.models)]

    def names_a_folder(self, text: str) -> bool:
        """Whether `text` reads as a model folder rather than a baseline or zoo name: a path, or the name
        of a --models folder."""
        return "/" in text or "\\" in text or text in _names(self.models).values()

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
        """The `navzoo eval --replays` files under the replay roots, as the page names them."""
        found = []
        for folder in _walk(self.replays):
            found += sorted(
                _name(p, self.replays) for p in folder.glob(f"*{SUFFIX}") if _safe(p, self.replays)
            )
        return found

    def replay_file(self, text: str) -> Path:
        """The replay file `text` names, if it lies inside a replay root; ReplayError otherwise."""
        path = _inside(text, self.replays, "--replays", ReplayError)
        if not path.is_file():
            raise ReplayError(f"replay file {_name(path, self.replays)} does not exist")
        return path

    def open_replay(self, text: str) -> Replay:
        """The replay file `text` names, read within the demo's bounds."""
        path = self.replay_file(text)
        return open_bounded(path, _name(path, self.replays))

    def relative(self, message: str) -> str:
        """`message` with every root written as the page names it (messages of the model loaders name
        files by their full path)."""
        named = [*_names(self.models).items(), *_names(self.replays).items()]
        for root, name in sorted(named, key=lambda item: -len(str(item[0]))):  # nested roots: inner first
            message = message.replace(str(root), name)
        return message


def open_bounded(path: Path, name: str) -> Replay:
    """The replay at `path` (called `name` in messages), refused past the demo's bounds."""
    return load_replay(
        path, name=name, max_bytes=MAX_REPLAY_BYTES, max_steps=MAX_STEPS, max_resolution=MAX_RESOLUTION
    )


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


def _names(roots: tuple[Path, ...]) -> dict[Path, str]:
    """What the page calls each root: its folder name, numbered where two roots share one."""
    names: dict[Path, str] = {}
    for root in roots:
        name, k = root.name or "root", 1
        while name in names.values():
            k += 1
            name = f"{root.name or 'root'}-{k}"
        names[root] = name
    return names


def _name(path: Path, roots: tuple[Path, ...]) -> str:
    """`path` inside one of `roots` as the page names it: <root name>/<path inside the root>."""
    for root, name in _names(roots).items():
        if path.is_relative_to(root):
            return str(Path(name) / path.relative_to(root))
    raise ValueError(f"{path} lies in none of the folders {roots}")


def _inside(text: str, roots: tuple[Path, ...], flag: str, error: type[Exception]) -> Path:
    """`text` resolved (symlinks followed), if inside a root: a name the page shows (<root name>/...) or an
    absolute path."""
    if not roots:
        raise error(f"no folders were given with {flag}: start `navzoo demo {flag} DIR` to open {text!r}")
    if not isinstance(text, str) or not text.strip() or "\x00" in text:
        raise error(f"{text!r} is not a path")
    path = _from_name(Path(text).expanduser(), roots)
    if path is None or not any(path.is_relative_to(root) for root in roots):
        shown = ", ".join(_names(roots).values())
        raise error(f"{text!r} is outside the folders this demo may read ({flag}: {shown}); refused")
    return path


def _from_name(path: Path, roots: tuple[Path, ...]) -> Path | None:
    """An absolute path, or a page's <root name>/<path inside it>, resolved; None for other relative paths."""
    if path.is_absolute():
        return path.resolve()
    by_name = {name: root for root, name in _names(roots).items()}
    if not path.parts or path.parts[0] not in by_name:
        return None
    return by_name[path.parts[0]].joinpath(*path.parts[1:]).resolve()
