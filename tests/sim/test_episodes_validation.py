"""Episode files are checked when read (whole gzip, JSON structure and types) and when their scenes are
built (start and goal on free floor, joined by a path): a bad episode is named with what to do, instead of
a traceback or an episode that runs to the step limit with an SPL of NaN."""

import contextlib
import gzip
import json
import math
import resource

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from navzoo.errors import EpisodeError, NavzooError
from navzoo.sim import BatchSim, SimConfig, load_episodes, save_episodes
from navzoo.sim.episodes import MAX_BYTES, Episode, episodes_for, scene_assets, to_habitat_position
from navzoo.sim.navgrid import NavGrid
from navzoo.sim.scenes import generate_scene

CONFIG = SimConfig(split="val", num_envs=1, sensors=(), scene_families=("apartment-s",), episodes_per_scene=2)
BAD = 1  # the episode each test spoils


@pytest.fixture(scope="module")
def episodes() -> list[Episode]:
    return episodes_for(CONFIG)[:3]


@pytest.fixture(scope="module")
def valid_file(episodes, tmp_path_factory):
    path = tmp_path_factory.mktemp("episodes") / "val.json.gz"
    save_episodes(episodes, path)
    return path


def raw_episodes(path) -> list[dict]:
    return json.loads(gzip.decompress(path.read_bytes()))["episodes"]


def write(path, raw: list[dict]):
    path.write_bytes(gzip.compress(json.dumps({"episodes": raw}).encode()))
    return path


def spoiled(valid_file, tmp_path, change) -> str:
    """A copy of the valid file whose episode BAD went through `change(raw_episode)`."""
    raw = raw_episodes(valid_file)
    change(raw[BAD])
    return str(write(tmp_path / "spoiled.json.gz", raw))


def naming(episodes, index=BAD) -> str:
    return rf"episode {index} \(episode_id '{episodes[index].episode_id}'\)"


def wall_position(episode: Episode) -> list[float]:
    """The habitat position of a cell where the agent does not fit, in the episode's scene."""
    nav = scene_assets(episode.scene_id, CONFIG.agent_radius, CONFIG.min_geodesic, CONFIG.max_geodesic).nav
    row, col = np.argwhere(~nav.free)[len(np.argwhere(~nav.free)) // 2]
    return to_habitat_position(nav.cell_centres(row, col))


def build_sim(path, **changes) -> None:
    BatchSim(CONFIG.replace(episodes_file=path, **changes)).close()


def test_valid_file_loads_and_runs(valid_file, episodes):
    assert [e.episode_id for e in load_episodes(valid_file)] == [e.episode_id for e in episodes]
    build_sim(str(valid_file))


def test_off_map_start_is_reported(valid_file, episodes, tmp_path):
    path = spoiled(valid_file, tmp_path, lambda e: e.update(start_position=[-3.0, 0.0, -1.0]))
    with pytest.raises(EpisodeError, match=rf"{naming(episodes)} of .*: its start .* is off the map.*free"):
        build_sim(path)


def test_start_inside_a_wall_is_reported(valid_file, episodes, tmp_path):
    path = spoiled(valid_file, tmp_path, lambda e: e.update(start_position=wall_position(episodes[BAD])))
    with pytest.raises(EpisodeError, match=rf"{naming(episodes)}.*its start .* is in or too near a wall"):
        build_sim(path)


def test_goal_inside_a_wall_is_reported(valid_file, episodes, tmp_path):
    path = spoiled(
        valid_file, tmp_path, lambda e: e["goals"][0].update(position=wall_position(episodes[BAD]))
    )
    with pytest.raises(EpisodeError, match=rf"{naming(episodes)}.*its goal .* is in or too near a wall"):
        build_sim(path)


def test_goal_out_of_reach_is_reported(tmp_path):
    # With a 0.15 m radius this scene has free floor that no path joins to the rest.
    scene, radius = "apartment-s/val/00002", 0.15
    nav = NavGrid(generate_scene(scene), radius)
    pocket, floor = np.argwhere(nav.free & ~nav.island)[0], np.argwhere(nav.island)[0]
    start, goal = (tuple(nav.cell_centres(*cell)) for cell in (pocket, floor))
    episode = Episode("cut-off", scene, start, 0.0, goal, math.nan, math.nan)
    path = tmp_path / "cut-off.json.gz"
    save_episodes([episode], path)
    with pytest.raises(EpisodeError, match=r"episode 0 \(episode_id 'cut-off'\).*cannot be reached"):
        build_sim(str(path), agent_radius=radius)


def test_a_goal_at_the_start_is_refused_before_any_step(valid_file, episodes, tmp_path):
    """Stopping at once would succeed with a shortest path of 0 m: SPL 0/0 for every agent."""
    path = spoiled(valid_file, tmp_path, lambda e: e["goals"][0].update(position=e["start_position"]))
    with pytest.raises(
        EpisodeError, match=rf"{naming(episodes)} of .*: its start is 0 m \(geodesic\) from its goal"
    ) as error:
        build_sim(path)
    assert "within success_distance=0.2 m" in str(error.value)
    assert "at least 1 m (geodesic) from its goal" in str(error.value)


def test_a_start_within_success_distance_of_its_goal_is_refused(valid_file, episodes):
    reach = max(e.geodesic_distance for e in episodes)  # the val episodes' geodesics are 1 m or more
    with pytest.raises(
        EpisodeError, match=rf"{naming(episodes, 0)} of .*: its start is .* within success_dist"
    ):
        build_sim(str(valid_file), success_distance=reach + 1)


def test_goalless_tasks_take_an_episode_whose_goal_is_its_start(valid_file, tmp_path):
    """Flee and Explore never end at a goal: the shared episode format's goal is not theirs to reach."""
    path = spoiled(valid_file, tmp_path, lambda e: e["goals"][0].update(position=e["start_position"]))
    build_sim(path, task="flee")


@pytest.mark.parametrize("split", ["val", "test"])
def test_the_shipped_splits_pass_validation(split):
    families = ("apartment-s", "apartment", "office", "office-l")
    sim = BatchSim(CONFIG.replace(split=split, scene_families=families, episodes_per_scene=100))
    assert sim.episodes is not None and len(sim.episodes) == 2400
    sim.close()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda e: e.update(scene_id=5), r"scene_id is 5, expected a navzoo scene id"),
        (
            lambda e: e.update(scene_id="castle/val/00000"),
            r"invalid scene_id='castle/val/00000': allowed values are '<family>/<split>/<index>'",
        ),
        (lambda e: e.update(start_position=[math.nan, 0, 1]), r"start_position is \[nan, 0, 1\].*finite"),
        (lambda e: e["goals"][0].update(position=[1, 2]), r"goals\[0\].position is \[1, 2\].*3 finite"),
        (lambda e: e.update(start_rotation=[0, 0, 0, 0]), r"start_rotation .* not a unit quaternion"),
        (lambda e: e.pop("goals"), r"it lacks 'goals'"),
        (lambda e: e.update(goals=[]), r"goals is \[\], expected a list whose first goal"),
        (lambda e: e.update(info={"geodesic_distance": "far"}), r"info.geodesic_distance is 'far'"),
    ],
)
def test_bad_fields_name_the_episode_and_the_problem(valid_file, episodes, tmp_path, change, message):
    with pytest.raises(EpisodeError, match=rf"{naming(episodes)} of .*spoiled.json.gz: {message}") as error:
        load_episodes(spoiled(valid_file, tmp_path, change))
    assert "fix or remove this episode" in str(error.value)


def test_a_bad_episode_id_is_reported_by_index(valid_file, tmp_path):
    path = spoiled(valid_file, tmp_path, lambda e: e.update(episode_id=True))
    with pytest.raises(EpisodeError, match=rf"episode {BAD} of .*: episode_id is True, expected a string"):
        load_episodes(path)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("truncated", r"cannot be read as gzip-compressed JSON \(EOFError.*truncated or damaged"),
        (b"not gzip", r"cannot be read as gzip-compressed JSON \(BadGzipFile"),
        (gzip.compress(b'{"episodes": [{'), r"cannot be read .*JSONDecodeError"),
        (gzip.compress(b"[" * 100_000), r"cannot be read .*RecursionError"),
        (gzip.compress(b'{"episodes": 3}'), r"not a habitat PointNav dataset; expected \{\"episodes\""),
        (gzip.compress(b'{"episodes": []}'), r"holds no episodes"),
        (gzip.compress(b'{"episodes": [7]}'), r"episode 0 of .*: it is 7, not an object"),
    ],
    # Fixed ids: pytest-xdist's workers must collect the same names (gzip's header holds the time).
    ids=[
        "truncated",
        "not-gzip",
        "bad-json",
        "too-deep",
        "episodes-not-a-list",
        "no-episodes",
        "not-an-object",
    ],
)
def test_unreadable_files_are_reported(valid_file, tmp_path, content, message):
    if content == "truncated":
        content = valid_file.read_bytes()[:-20]
    path = tmp_path / "bad.json.gz"
    path.write_bytes(content)
    with pytest.raises(EpisodeError, match=message):
        load_episodes(path)


def _gzip_of_spaces(path, size: int):
    """A .json.gz of `size` bytes of whitespace, compressed a mebibyte at a time (a gzip bomb)."""
    compressor = gzip.GzipFile(path, "wb")
    for start in range(0, size, 1 << 20):
        compressor.write(b" " * min(1 << 20, size - start))
    compressor.close()
    return path


def test_a_gzip_bomb_is_refused_without_inflating_it(tmp_path):
    path = _gzip_of_spaces(tmp_path / "bomb.json.gz", 4 * MAX_BYTES)
    assert path.stat().st_size < 1 << 20
    before = _peak_rss_mb()
    with pytest.raises(
        EpisodeError, match=r"episode file .*bomb.json.gz decompresses to more than 64 MiB, the"
    ):
        load_episodes(path)
    assert _peak_rss_mb() - before < 2 * MAX_BYTES / 2**20  # one bounded read, never the whole file


@pytest.mark.parametrize("name", ["val.json", "val.json.gz"])
def test_the_size_bound_is_exact_and_can_be_raised(episodes, tmp_path, name):
    path = tmp_path / name
    save_episodes(episodes, path)
    size = len(gzip.decompress(path.read_bytes())) if name.endswith(".gz") else path.stat().st_size
    assert len(load_episodes(path, max_bytes=size)) == len(episodes)
    grows = "decompresses to" if name.endswith(".gz") else "holds"
    with pytest.raises(EpisodeError, match=rf"{name} {grows} more than {size - 1:,} bytes.*split the file"):
        load_episodes(path, max_bytes=size - 1)


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# --- fuzzing the reader: any document or bytes give episodes or a navzoo error, never another exception ---
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)
NUMBER = st.floats() | st.integers() | st.booleans() | st.just(10**400)
POSITION = (
    st.just([1.0, 0.0, -2.0]) | st.lists(NUMBER, min_size=3, max_size=3) | st.lists(NUMBER, max_size=5) | JSON
)
# Each field is valid or fuzzed, so that some documents get through and others fail at every check.
FIELDS = {
    "episode_id": st.text(max_size=8) | st.integers() | JSON,
    "scene_id": st.sampled_from(["apartment/val/00002", "apartment-s/val/99999", "a/b/c", "x"]) | JSON,
    "start_position": POSITION,
    "start_rotation": st.just([0.0, 0.6, 0.0, 0.8]) | st.lists(NUMBER, min_size=4, max_size=4) | JSON,
    "goals": st.lists(st.fixed_dictionaries({"position": POSITION}), min_size=1, max_size=2) | JSON,
    "info": st.fixed_dictionaries({}, optional={"geodesic_distance": NUMBER | JSON}) | JSON,
}
EPISODE = st.fixed_dictionaries(FIELDS) | st.fixed_dictionaries({}, optional=FIELDS)
DOCUMENT = st.fixed_dictionaries({"episodes": st.lists(EPISODE | JSON, max_size=3)}) | JSON


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


def load_or_navzoo_error(path) -> None:
    with contextlib.suppress(NavzooError):
        assert all(isinstance(e, Episode) for e in load_episodes(path))


@settings(max_examples=200, deadline=None)
@given(document=DOCUMENT, compressed=st.booleans())
def test_fuzzed_documents_load_or_raise_a_navzoo_error(scratch, document, compressed):
    text = json.dumps(document).encode()
    path = scratch / ("doc.json.gz" if compressed else "doc.json")
    path.write_bytes(gzip.compress(text) if compressed else text)
    load_or_navzoo_error(path)


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_fuzzed_bytes_load_or_raise_a_navzoo_error(scratch, valid_file, data):
    valid = valid_file.read_bytes()
    content = data.draw(
        st.binary(max_size=300)
        | st.integers(0, len(valid)).map(lambda cut: valid[:cut])
        | st.tuples(st.integers(0, len(valid) - 1), st.integers(1, 255)).map(
            lambda flip: valid[: flip[0]] + bytes([valid[flip[0]] ^ flip[1]]) + valid[flip[0] + 1 :]
        )
    )
    path = scratch / data.draw(st.sampled_from(["bytes.json.gz", "bytes.json"]))
    path.write_bytes(content)
    load_or_navzoo_error(path)


@settings(max_examples=100, deadline=None)
@given(
    depth=st.integers(0, 20_000),
    padding=st.integers(0, 3000),
    max_bytes=st.integers(1, 40_000),
    compressed=st.booleans(),
)
def test_fuzzed_sizes_and_depths_are_refused_cleanly(
    scratch, valid_file, depth, padding, max_bytes, compressed
):
    """A valid file nested `depth` lists deep and padded: past max_bytes it is refused for its size,
    whatever it holds; within it, nested it is refused (not a dataset, or too deep), else it loads."""
    valid = gzip.decompress(valid_file.read_bytes())
    text = b"[" * depth + valid + b"]" * depth + b" " * padding
    path = scratch / ("sized.json.gz" if compressed else "sized.json")
    path.write_bytes(gzip.compress(text, compresslevel=1) if compressed else text)
    if len(text) > max_bytes:
        with pytest.raises(EpisodeError, match=r"more than .*, the most read here"):
            load_episodes(path, max_bytes=max_bytes)
    elif depth:
        with pytest.raises(EpisodeError, match=r"not a habitat PointNav dataset|RecursionError"):
            load_episodes(path, max_bytes=max_bytes)
    else:
        assert len(load_episodes(path, max_bytes=max_bytes)) == 3
