"""The errors for an episode of a habitat episodes file that cannot run on its scanned scene: each names the
episode, the file, the problem and the fix."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from navzoo.errors import EpisodeError
from navzoo.sim.episodes import MeshEpisode
from navzoo.sim.scans.frame import stage_config_path
from navzoo.sim.scans.mesh_scenes import on_floor

if TYPE_CHECKING:
    from navzoo.sim.scans.mesh_scenes import MeshScene


def episode_error(episodes_file: str | None, index: int, ep: MeshEpisode, problem: str) -> EpisodeError:
    """The error for episode `index` of `episodes_file` and its `problem`."""
    return EpisodeError(
        f"episode {index} (episode_id {ep.episode_id!r}) of {episodes_file} in "
        f"{ep.scene_id}: {problem}; fix or remove the episode"
    )


def off_floor_error(
    episodes_file: str | None,
    index: int,
    ep: MeshEpisode,
    point: str,
    episodes: list[MeshEpisode],
    scene: MeshScene,
) -> EpisodeError:
    """The error for an episode point off the floor. Where no episode of the scene starts on its floor, the
    mesh likely stands in another frame than its episodes assume (a wrongly oriented stage): the message
    says how it was oriented and where to say otherwise."""
    starts = [e.start_position for e in episodes if e.scene_id == ep.scene_id]
    if any(on_floor(scene.navmesh, start) for start in starts):
        return episode_error(episodes_file, index, ep, f"{point} is not on the navigable floor")
    frame = scene.frame
    return EpisodeError(
        f"episode {index} (episode_id {ep.episode_id!r}) of {episodes_file}: {point} is not "
        f"on the navigable floor of {ep.scene_id}, and no episode of that scene starts on it, so the "
        f"mesh may stand in another frame than its episodes: it was read with up {list(frame.up)} and "
        f"front {list(frame.front)} ({frame.source}); if that is wrong, give its up and front in "
        f"{stage_config_path(Path(ep.scene_id)).name} beside it, or in the scene dataset config"
    )
