"""What the demo may open: baselines, zoo models with weights (shipped with navzoo, cached, or fetched on
first use: habitat's releases, Hub repositories), and model folders and replay files under the folders it
was started with. The page names those as <folder name>/<path inside it>, never by server path. Every path
a page sends must resolve (symlinks followed) inside one of those folders, or it is refused.

The demo may also have been started with a scenes folder (--scenes-dir, and --scene-dataset): replays of
episodes on scanned meshes open only with one, their meshes looked for inside it, as a replay names them
(habitat's scene datasets are often links to where the data lies, so links are not followed there), and with
an episodes file (--episodes-file), whose episodes the page runs instead of a split's.

It also bounds what the demo opens: a replay past MAX_STEPS, MAX_RESOLUTION or MAX_REPLAY_BYTES is refused
before anything is built, since a few kilobytes of gzip can ask for gigabytes of pictures."""

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from navzoo.errors import ConfigError, ReplayError, UnknownModelError
from navzoo.evaluation.replay import SUFFIX, Replay, load_replay, relocate_replay
from navzoo.models.weights import CONFIG_NAME, WEIGHTS_NAME
from navzoo.sim.config import SimConfig
from navzoo.zoo.loader import list_models

DEFAULT_MODEL = "navzoo-pointnav-depth"  # navzoo's own depth agent, the first choice wherever it is local
FALLBACK_MODEL = "goal-follower"
MAX_DEPTH = 4  # folder levels searched below a root: run folders, not whole disks
MAX_STEPS = SimConfig.max_episode_steps  # 500: evaluation episodes, and the demo's own runs, end by then
MAX_RESOLUTION = 256  # camera side: the zoo's largest, and the size the page shows a view at
MAX_REPLAY_BYTES = 1 << 20  # JSON in a replay file: a 500-step replay of a learned policy is about 100 KB


class EpisodeFields(TypedDict, total=False):
    """SimConfig's fields of an episodes file the page runs, and of the scanned meshes of its episodes."""

    episodes_file: str
    scenes_dir: str | None
    scene_dataset: str | None


@dataclass(frozen=True)
class Sources:
    models: tuple[Path, ...] = ()  # --models roots, resolved
    replays: tuple[Path, ...] = ()  # --replays roots, resolved
    scenes_dir: Path | None = None  # --scenes-dir as given: the folder of scanned meshes
    scene_dataset: Path | None = None  # --scene-dataset as given: the config that orients those meshes
    episodes_file: Path | None = None  # --episodes-file as given: the episodes the page runs

    @classmethod
    def from_folders(
        cls, models=(), replays=(), scenes_dir=None, scene_dataset=None, episodes_file=None
    ) -> "Sources":
        if scene_dataset is not None and scenes_dir is None:
            raise ConfigError(
                "--scene-dataset",
                str(scene_dataset),
                "a file given with --scenes-dir (it orients the meshes there)",
            )
        return cls(
            _roots(models, "--models"),
            _roots(replays, "--replays"),
            _given(scenes_dir, "--scenes-dir", folder=True),
            _given(scene_dataset, "--scene-dataset", folder=False),
            _given(episodes_file, "--episodes-file", folder=False),
        )

    def episode_fields(self) -> EpisodeFields:
        """SimConfig's episodes_file, scenes_dir and scene_dataset of the episodes the page runs: none
        without an episodes file (the scenes folder then only holds the meshes of replays)."""
        if self.episodes_file is None:
            return {}
        return {
            "episodes_file": str(self.episodes_file),
            "scenes_dir": None if self.scenes_dir is None else str(self.scenes_dir),
            "scene_dataset": None if self.scene_dataset is None else str(self.scene_dataset),
        }

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
        """The replay file `text` names, read within the demo's bounds (open_file)."""
        path = self.replay_file(text)
        return self.open_file(path, _name(path, self.replays))

    def open_file(self, path: Path, name: str) -> Replay:
        """The replay at `path` (called `name` in messages), refused past the demo's bounds; one on scanned
        meshes looks for them in the demo's scenes folder, and is refused without one."""
        replay = open_bounded(path, name)
        if not replay.on_meshes:
            return replay
        if self.scenes_dir is None:
            raise ReplayError(
                f"{name} was recorded on the scanned mesh {replay.scene_name}: start `navzoo demo "
                "--scenes-dir DIR` with the folder of its scenes (habitat's data/scene_datasets) to open it"
            )
        if replay.sim_config.scene_dataset is not None and self.scene_dataset is None:
            raise ReplayError(
                f"{name} was recorded with the scene dataset config "
                f"{Path(replay.sim_config.scene_dataset).name}, which orients its meshes: start `navzoo demo "
                "--scenes-dir DIR --scene-dataset FILE` to open it"
            )
        return relocate_replay(replay, self.scenes_dir, self.scene_dataset, name)

    def relative(self, message: str) -> str:
        """`message` with every root written as the page names it (messages of the model loaders name
        files by their full path), and the scene and episode files by their names."""
        named = [*_names(self.models).items(), *_names(self.replays).items()]
        named += [
            (path, path.name) for path in (self.scenes_dir, self.scene_dataset, self.episodes_file) if path
        ]
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


def _given(path, flag: str, folder: bool) -> Path | None:
    """An existing folder or file as given (`~` expanded): episodes on scanned meshes name their mesh by
    its path, so the demo joins the scenes folder as `navzoo eval --scenes-dir` was given it."""
    if path is None:
        return None
    given = Path(path).expanduser()
    if not (given.is_dir() if folder else given.is_file()):
        raise ConfigError(flag, str(path), f"an existing {'folder' if folder else 'file'}")
    return given


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
