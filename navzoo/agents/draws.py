"""Random draws keyed on an episode's identity, so an agent that samples takes the same actions in an episode
whichever environment runs it, however many there are, and wherever the episode stands in its list.

`episode_key` hashes an episode's scene (as its episode file names it) and episode_id; `keyed_uniform`
turns (seed, episode key, step) into one uniform draw. navzoo.evaluation passes the keys to agents that
take them (`act(..., keys=)`).
"""

import torch

from navzoo.sim.batch_sim import hash32
from navzoo.sim.episodes import Episode, MeshEpisode
from navzoo.sim.scenes import stable_seed


def episode_key(episode: Episode) -> int:
    """A 31-bit key of the episode's identity, the same in any episode list and, for a scanned scene's
    episode, wherever its scenes folder lies."""
    scene = episode.dataset_scene_id if isinstance(episode, MeshEpisode) else episode.scene_id
    return stable_seed("episode", scene, episode.episode_id) & 0x7FFFFFFF


def keyed_uniform(seed: int, keys: torch.Tensor) -> torch.Tensor:
    """One uniform draw in [0, 1) (float64) per row of `keys` [N, 2] = (episode key, step within the
    episode): a counter-based hash of (seed, episode, step), so the draw depends on nothing else."""
    stream = stable_seed("agent-draws", seed) & 0xFFFFFFFF
    episode, step = keys.long().unbind(1)
    # The constants keep episode 0 and step 0 away from the mixer's fixed point at 0.
    key = hash32(stream ^ hash32(episode + 0x9E37))
    return hash32(key ^ hash32(step + 0x6A09)).double() / 2.0**32
