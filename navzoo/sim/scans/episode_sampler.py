"""habitat-lab's PointNav episode generator on a navmesh: where a training episode on a scanned mesh starts
and where its goal is.

The rules are those of habitat-lab's `habitat/datasets/pointnav/pointnav_generator.py`
(`generate_pointnav_episode` and `is_compatible_episode`, with their defaults; read from that source in
docs/design/habitat-sim-rules.md section 6):

1. A target (the goal) is a random navigable point; it is skipped when the radius of its island is under
   ISLAND_RADIUS_LIMIT = 1.5 m.
2. Up to `number_retries_per_target` = 10 sources (starts) are drawn for it, each a random navigable
   point, and the first compatible one is taken:
   a. same floor: |source.y - target.y| <= 0.5 m;
   b. the geodesic distance d from the source to the target is finite (the same island) and
      closest_dist_limit = 1 <= d <= furthest_dist_limit = 30 m;
   c. with r = d / the 3D Euclidean distance, an episode with r < geodesic_to_euclid_min_ratio = 1.1 (nearly
      a straight line) is rejected when rand() > 20 (r - 0.98)^2, i.e. kept with that probability;
   d. the source's island radius is at least 1.5 m.
   Without a compatible source habitat moves on to a new target.
3. The start rotation is a random yaw, uniform in [0, 2 pi).

Random navigable points are places of navzoo's navmesh (navzoo.sim.scans.navmesh) drawn uniformly: places
are equal-area cells, so this is habitat's area-uniform `sample_navigable_point`; a point is its place's
centre on the floor. Island radii are the navmesh's (NavMesh.island_radius). Not reproduced: habitat's
optional greedy-follower check of the shortest action path (`is_gen_shortest_path`), which drops an
episode only where its follower fails. Where habitat draws targets without end, navzoo gives up after
`max_targets` of them with an EpisodeError naming the mesh.

Distances are habitat's geodesic distance, the taut path's length (navzoo.sim.scans.taut_paths).
Candidates are checked with numpy, many at once: targets are drawn in growing batches (1, 2, 4, ... up to
TARGET_BATCH), their searches run in one Dijkstra call, and all their sources checked as one [targets,
retries] array on the graph's distances, which bound the taut ones from above; the pairs that may pass are
then checked on the taut distance in draw order, and the first compatible one wins, as habitat's loops
would take it.
Everything comes from the numpy Generator passed in, so an episode is a function of that generator's seed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from navzoo.config_base import Config
from navzoo.errors import ConfigError, EpisodeError
from navzoo.sim.scans.navmesh import NavMesh
from navzoo.typed_config import check_field_types

ISLAND_RADIUS_LIMIT = 1.5  # habitat-lab's pointnav_generator.ISLAND_RADIUS_LIMIT, metres
TARGET_BATCH = 16  # the most targets whose distance fields one Dijkstra call computes
# Metres a taut distance may exceed the graph's: float32 fields, and a first hop's 3D chord on a slope.
GRAPH_SLACK = 1e-3


@dataclass(frozen=True)
class PointNavRules(Config):
    """habitat-lab's `generate_pointnav_episode` / `is_compatible_episode` arguments, with its defaults."""

    closest_dist_limit: float = 1.0
    furthest_dist_limit: float = 30.0
    geodesic_to_euclid_min_ratio: float = 1.1
    number_retries_per_target: int = 10
    same_floor_height: float = 0.5  # |source.y - target.y| at most this
    island_radius_limit: float = ISLAND_RADIUS_LIMIT
    max_targets: int = 2000  # navzoo's bound on habitat's endless loop over targets

    def __post_init__(self) -> None:
        check_field_types(self)
        if not 0 <= self.closest_dist_limit < self.furthest_dist_limit:
            raise ConfigError(
                "closest_dist_limit", self.closest_dist_limit, "metres in [0, furthest_dist_limit)"
            )
        if self.number_retries_per_target < 1 or self.max_targets < 1:
            raise ConfigError(
                "number_retries_per_target/max_targets",
                (self.number_retries_per_target, self.max_targets),
                "positive integers",
            )


@dataclass(frozen=True)
class SampledEpisode:
    """One episode in habitat's frame: positions [3] (x, y up, z) at place centres on the floor."""

    start: np.ndarray  # float64 [3]
    goal: np.ndarray  # float64 [3]
    yaw: float  # radians, habitat's rotation about +y
    geodesic_distance: float
    euclidean_distance: float
    start_place: int
    goal_place: int


def island_radii(navmesh: NavMesh) -> np.ndarray:
    """float64 [islands]: each island's radius, the largest distance of its places from their centroid
    (NavMesh.island_radius, for every island at once)."""
    if navmesh.size == 0:
        return np.zeros(0)
    label, positions = navmesh.island.astype(np.int64), navmesh.positions
    count = np.bincount(label)
    centroid = np.stack([np.bincount(label, positions[:, i]) for i in range(3)], 1) / count[:, None]
    distance = np.linalg.norm(positions - centroid[label], axis=1)
    radius = np.zeros(len(count))
    np.maximum.at(radius, label, distance)
    return radius


class EpisodeSampler:
    """habitat's PointNav episodes on one navmesh (the module docstring has the rules)."""

    def __init__(self, navmesh: NavMesh, name: str, rules: PointNavRules | None = None):
        self.navmesh, self.name = navmesh, name
        self.rules = rules or PointNavRules()
        self._positions = navmesh.positions
        radius = island_radii(navmesh)
        # bool [places]: on an island of habitat's radius at least (rules 1 and 2d)
        self._large = (radius >= self.rules.island_radius_limit)[navmesh.island]
        if not self._large.any():
            biggest = float(radius.max()) if len(radius) else 0.0
            raise EpisodeError(
                f"{name}: no island of its navigable floor has habitat's radius of at least "
                f"{self.rules.island_radius_limit:g} m (the largest: {biggest:.2f} m), so habitat's PointNav "
                "generator draws no episode on it; remove the mesh from the scenes folder"
            )

    def field(self, place: int) -> np.ndarray:
        """float32 [places]: the geodesic distance of every place to `place` (inf on other islands)."""
        return self.navmesh.place_fields(np.asarray([place]))[0]

    def sample(self, rng: np.random.Generator) -> tuple[SampledEpisode, np.ndarray]:
        """An episode and its goal's distance field (`field`); EpisodeError, naming the mesh, when none is
        found among `max_targets` targets."""
        rules, n = self.rules, self.navmesh.size
        tried, batch = 0, 1
        while tried < rules.max_targets:
            count = min(batch, rules.max_targets - tried)
            tried += count
            batch = min(2 * batch, TARGET_BATCH)
            targets = rng.integers(n, size=count)
            sources = rng.integers(n, size=(count, rules.number_retries_per_target))
            keep_draw = rng.random((count, rules.number_retries_per_target))
            yaw = rng.random(count) * 2 * math.pi
            usable = np.flatnonzero(self._large[targets])  # rule 1: the target's island radius
            if len(usable) == 0:
                continue
            searches = self.navmesh.place_searches(targets[usable])
            fields = np.stack([search.field for search in searches])
            graph = np.take_along_axis(fields, sources[usable], axis=1).astype(np.float64)
            # The rules read habitat's geodesic distance, the taut path's length, which lies between the
            # straight line and the graph's: check every pair that may pass, in draw order, taut.
            maybe = self._compatible(targets[usable], sources[usable], keep_draw[usable], graph + GRAPH_SLACK)
            for row, column in np.argwhere(maybe):  # row-major: the first target, then its first source
                target, source = int(targets[usable[row]]), int(sources[usable[row], column])
                taut = np.array([[searches[row].distance(self._positions[source])]])
                pair = (np.array([target]), np.array([[source]]), keep_draw[usable[row], column, None, None])
                if self._compatible(*pair, taut, taut)[0, 0]:
                    episode = SampledEpisode(
                        start=self._positions[source].copy(),
                        goal=self._positions[target].copy(),
                        yaw=float(yaw[usable[row]]),
                        geodesic_distance=float(taut[0, 0]),
                        euclidean_distance=float(
                            np.linalg.norm(self._positions[source] - self._positions[target])
                        ),
                        start_place=source,
                        goal_place=target,
                    )
                    return episode, fields[row]
        raise EpisodeError(
            f"{self.name}: no PointNav episode after {rules.max_targets} targets x "
            f"{rules.number_retries_per_target} starts under habitat's rules (geodesic distance in "
            f"[{rules.closest_dist_limit:g}, {rules.furthest_dist_limit:g}] m on one floor and island, "
            f"geodesic/Euclidean ratio {rules.geodesic_to_euclid_min_ratio:g}); its floor may be too small: "
            "remove the mesh from the scenes folder"
        )

    def _compatible(self, targets, sources, keep_draw, longest, shortest=None) -> np.ndarray:
        """habitat's is_compatible_episode for targets [T] and their sources [T, R], whose geodesic distance
        lies in [shortest, longest] [T, R] (shortest: by default the straight line, which no path beats):
        bool [T, R], whether some distance there passes."""
        rules, positions = self.rules, self._positions
        start, goal = positions[sources], positions[targets][:, None]
        euclid = np.linalg.norm(start - goal, axis=2)
        shortest = euclid if shortest is None else shortest
        same_floor = np.abs(start[..., 1] - goal[..., 1]) <= rules.same_floor_height
        same_island = self.navmesh.island[sources] == self.navmesh.island[targets][:, None]
        in_range = (
            np.isfinite(longest)
            & (longest >= rules.closest_dist_limit)
            & (shortest <= rules.furthest_dist_limit)
        )
        # A longer way is less straight, and the rule keeps more of those: check the longest.
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = longest / euclid
        straight = ratio < rules.geodesic_to_euclid_min_ratio
        rejected_straight = straight & (keep_draw > 20 * (ratio - 0.98) ** 2)
        return same_floor & same_island & in_range & ~rejected_straight & self._large[sources]
