"""Episode files are checked when read (whole gzip, JSON structure and types) and when their scenes are
built (start and goal on free floor, joined by a path): a bad episode is named with what to do, instead of
a traceback or an episode that runs to the step limit with an SPL of NaN."""

import contextlib
import gzip
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from navzoo.errors import EpisodeError, NavzooError
from navzoo.sim import BatchSim, SimConfig, load_episodes, save_episodes
from navzoo.sim.episodes import Episode, episodes_for, scene_assets, to_habitat_position
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
