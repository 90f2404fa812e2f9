"""Typed validation of every config source: YAML presets with key=value overrides, config.json, and the
dataclasses themselves. Bad values end in a navzoo error naming the key, the value and the expected type,
never in another exception, and a config is checked against its weights' header before a model is built.
Property-based tests fuzz the parsers with hypothesis."""

import contextlib
import dataclasses
import json
import resource
import shutil
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import navzoo
from navzoo.errors import ConfigError, NavzooError, WeightsFormatError
from navzoo.models import NeuralControllerConfig, PolicyConfig
from navzoo.models.weights import read_config
from navzoo.sim.config import SimConfig
from navzoo.storage.bounded import MAX_CONFIG_BYTES
from navzoo.train.config import TrainConfig, load_config
from navzoo.train.config_blocks import DistributedConfig, ImitationConfig, PPOConfig
from navzoo.train.overrides import apply_override
from navzoo.transfer.config import TransferConfig
from navzoo.typed_config import check_field_types

SHIPPED_DEPTH = Path(navzoo.__file__).parent / "zoo" / "weights" / "navzoo-pointnav-depth"
FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize(
    ("override", "key", "expected"),
    [
        ("ppo.gamma=abc", "ppo.gamma", "a finite number (got str)"),
        ("sim.resolution=64", "sim.resolution", "a list of 2 integers (got int)"),
        ("seed=abc", "seed", "an integer (got str)"),
        ("sim.num_envs=true", "sim.num_envs", "an integer (got bool)"),
        ("policy=5", "policy", "a mapping (got int)"),
        ("ppo.lr=.nan", "ppo.lr", "a finite number (got float)"),
        ("sim.sensors=depth", "sim.sensors", "a list of strings (got str)"),
        ("policy.hidden_size=1000000", "policy.hidden_size", "an integer in 1 .. 16384"),
        ("policy.backbone=5", "policy.backbone", "a string or null (got int)"),
        ("rank_sim_overrides.x=1", "rank_sim_overrides key", "an integer (got str)"),
        ("sim=5", "sim", "a mapping of SimConfig fields"),
    ],
)
def test_bad_override_names_key_value_and_type(override, key, expected):
    with pytest.raises(ConfigError) as info:
        load_config("navzoo-pointnav-depth", [override])
    assert info.value.field == key
    assert str(info.value).endswith(f"allowed values are {expected}")


def test_yaml_forms_are_normalised():
    """What YAML cannot say is normalised: 2e6 frames is an integer, lists are tuples, "1" keys are ranks."""
    config = load_config(
        "navzoo-pointnav-depth", ["total_frames=2e6", "ppo.lr=1", "rank_sim_overrides={'1': {seed: 3}}"]
    )
    assert config.total_frames == 2_000_000 and isinstance(config.total_frames, int)
    assert config.ppo.lr == 1.0 and isinstance(config.ppo.lr, float)
    assert config.rank_sim_overrides == {1: {"seed": 3}}
    assert isinstance(config.sim.resolution, tuple) and isinstance(config.sim.sensors, tuple)


@pytest.mark.parametrize(
    ("override", "key", "closest"),
    [
        ("ppo.lrr=1e-4", "ppo.lrr", "lr"),
        ("sim.num_env=2", "sim.num_env", "num_envs"),
        ("distributed.sink_frac=0.5", "distributed.sink_frac", "sync_frac"),
        ("imitation.bearing_wieght=1", "imitation.bearing_wieght", "bearing_weight"),
        ("totl_frames=2e6", "totl_frames", "total_frames"),
    ],
)
def test_unknown_key_suggests_the_closest_field(override, key, closest):
    with pytest.raises(ConfigError) as info:
        load_config("navzoo-pointnav-depth", [override])
    assert info.value.field == key
    message = str(info.value)  # the suggestion first, the list of fields after it
    assert message.startswith(f"invalid {key}=")
    assert f": did you mean {closest!r}? Allowed values are" in message


def test_unknown_architecture_key_suggests_the_closest_field(tmp_path):
    folder = _model_folder(tmp_path, lambda c: c["architecture"].update(hiden_size=512))
    with pytest.raises(
        WeightsFormatError, match=r"architecture\.hiden_size=512: .*did you mean 'hidden_size'\?"
    ):
        navzoo.load(str(folder))


def test_unknown_key_unlike_any_field_gets_no_suggestion():
    with pytest.raises(ConfigError) as info:
        SimConfig.from_dict({"zzzzzz": 1})
    assert info.value.field == "zzzzzz" and "did you mean" not in str(info.value)


@pytest.mark.parametrize(
    "config",
    [
        SimConfig(resolution=(64, 48)),
        PolicyConfig(backbone=None, sensors=(), resolution=None, dummy_goal=(5.0, 0.0)),
        NeuralControllerConfig(controller=PolicyConfig(resolution=(64, 64))),
        TransferConfig(task="flee", setting="scratch", base="navzoo-pointnav-depth"),
        TrainConfig(ppo=PPOConfig(aux_tasks=("cpca",)), rank_sim_overrides={1: {"seed": 3}}),
    ],
    ids=lambda config: type(config).__name__,
)
def test_to_dict_is_plain_data_that_from_dict_reads_back(config):
    data = config.to_dict()
    assert yaml.safe_load(yaml.safe_dump(data)) == data  # nested configs are mappings, tuples are lists
    assert type(config).from_dict(json.loads(json.dumps(data))) == config


def test_dataclasses_check_types_when_built_directly():
    with pytest.raises(ConfigError, match=r"invalid hfov='wide'.*a finite number \(got str\)"):
        SimConfig(hfov="wide")
    with pytest.raises(ConfigError, match=r"invalid resolution=\[64\].*a list of 2 integers"):
        SimConfig(resolution=[64])
    with pytest.raises(ConfigError, match=r"invalid dummy_goal=\[1.0, 'x'\]"):
        PolicyConfig(backbone=None, sensors=(), resolution=None, dummy_goal=[1.0, "x"])
    with pytest.raises(ConfigError, match=r"invalid ppo.num_steps=1.5.*an integer \(got float\)"):
        PPOConfig(num_steps=1.5)
    with pytest.raises(ConfigError, match=r"imitation.inflection_weight=None"):
        ImitationConfig(inflection_weight=None)
    with pytest.raises(ConfigError, match=r"distributed.backend=3"):
        DistributedConfig(backend=3)


def test_long_values_are_quoted_short():
    with pytest.raises(ConfigError) as info:
        SimConfig(device="x" * 100_000)
    assert len(str(info.value)) < 400


def _model_folder(tmp_path: Path, change) -> Path:
    folder = tmp_path / "model"
    folder.mkdir()
    shutil.copy(SHIPPED_DEPTH / "model.safetensors", folder)
    config = json.loads((SHIPPED_DEPTH / "config.json").read_text())
    change(config)
    (folder / "config.json").write_text(json.dumps(config))
    return folder


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda c: c["architecture"].update(backbone=5), "invalid backbone=5"),
        (lambda c: c["architecture"].update(sensors=5), "invalid sensors=5"),
        (lambda c: c["architecture"].update(resolution=[64, "64"]), "invalid resolution=[64, '64']"),
        (lambda c: c.update(format_version="2"), "format_version '2'; it must be an integer"),
        (lambda c: c.update(format_version=2), "format_version 2, newer than this navzoo reads"),
        (lambda c: c.update(architecture=[1]), "a JSON object with PolicyConfig fields"),
        (lambda c: c.update(task=["pointnav"]), "task must be a string"),
        (lambda c: c.update(provenance=5), "provenance must be a JSON object or null"),
    ],
)
def test_bad_config_json_is_refused(tmp_path, change, message):
    with pytest.raises(WeightsFormatError) as info:
        navzoo.load(str(_model_folder(tmp_path, change)))
    assert message in str(info.value)


def test_deeply_nested_config_json_is_refused(tmp_path):
    folder = _model_folder(tmp_path, lambda c: None)
    (folder / "config.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(WeightsFormatError, match="nested too deeply"):
        read_config(folder)


def test_oversized_config_json_is_refused_unread(tmp_path):
    folder = _model_folder(tmp_path, lambda c: None)
    path = folder / "config.json"
    path.write_text(path.read_text() + " " * MAX_CONFIG_BYTES)  # valid JSON, but no config is this large
    with pytest.raises(WeightsFormatError, match=r"config.json holds more than 1 MiB, the most read here"):
        read_config(folder)


def test_oversized_yaml_config_is_refused_unread(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text("model: navzoo-pointnav-blind\n" + "#" * MAX_CONFIG_BYTES + "\n")
    with pytest.raises(
        NavzooError, match=r"config file .*big.yaml holds more than 1 MiB, the most read here"
    ):
        load_config(str(path))


def test_deeply_nested_yaml_config_is_refused(tmp_path):
    path = tmp_path / "deep.yaml"
    path.write_text("seed: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(ConfigError, match="nested a few levels deep"):
        load_config(str(path))


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.mark.parametrize("hidden_size", [1_000_000, 16_384])
def test_oversized_config_is_refused_before_allocation(tmp_path, hidden_size):
    """A million is past the bound; 16,384 is within it but disagrees with the weights' header. Building
    that model would take gigabytes (a GRU of 16,384 alone is 3.2 GB), so the peak memory shows whether
    the header was read first."""
    folder = _model_folder(tmp_path, lambda c: c["architecture"].update(hidden_size=hidden_size))
    before = _peak_rss_mb()
    with pytest.raises(WeightsFormatError, match=r"hidden_size=1000000|does not match the architecture"):
        navzoo.load(str(folder))
    assert _peak_rss_mb() - before < 300


# --- fuzzing --------------------------------------------------------------------------------------------

JSON_LEAVES = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
)


def _fields(kind) -> list[str]:
    return [f.name for f in dataclasses.fields(kind)]


def _blocks(kind) -> st.SearchStrategy:
    """Mappings of real field names (and an unknown one) to fuzzed JSON values."""
    return st.dictionaries(st.sampled_from([*_fields(kind), "unknown_key"]), JSON_VALUES, max_size=4)


TRAIN_DICTS = st.fixed_dictionaries(
    {},
    optional={
        "sim": _blocks(SimConfig) | JSON_VALUES,
        "ppo": _blocks(PPOConfig),
        "imitation": _blocks(ImitationConfig),
        "distributed": _blocks(DistributedConfig),
        "policy": _blocks(PolicyConfig) | JSON_VALUES,
        "seed": JSON_VALUES,
        "total_frames": JSON_VALUES,
        "rank_sim_overrides": JSON_VALUES,
        "algorithm": JSON_VALUES,
        "torch_threads": JSON_VALUES,
    },
)


@FUZZ
@given(data=TRAIN_DICTS)
@example(data={"rank_sim_overrides": {"¹": None}})  # a digit to str.isdigit, not to int()
def test_fuzzed_train_configs_end_in_navzoo_errors(data):
    data = {"model": "pointnav-blind", **data}
    with contextlib.suppress(NavzooError):
        TrainConfig.from_dict(data)


@FUZZ
@given(items=st.lists(st.text(max_size=40), max_size=4))
def test_fuzzed_overrides_end_in_navzoo_errors(items):
    with contextlib.suppress(NavzooError):
        load_config("navzoo-pointnav-blind", items)


@FUZZ
@given(item=st.text(alphabet="abcdeps.=[]{}:,'\" 0123456789-e", max_size=30))
def test_fuzzed_override_syntax_ends_in_navzoo_errors(item):
    data: dict = {"sim": {"num_envs": 2}}
    try:
        apply_override(data, item)
        TrainConfig.from_dict({"model": "pointnav-blind", **data})
    except NavzooError:
        pass


CONFIG_JSON_TOPS = st.dictionaries(
    st.sampled_from(["name", "task", "format_version", "provenance"]), JSON_VALUES, max_size=3
)


@FUZZ
@given(architecture=_blocks(PolicyConfig) | JSON_VALUES, top=CONFIG_JSON_TOPS)
def test_fuzzed_config_json_ends_in_navzoo_errors(tmp_path_factory, architecture, top):
    folder = tmp_path_factory.mktemp("fuzz")
    document = {"format": "navzoo-policy", "format_version": 1, **top, "architecture": architecture}
    (folder / "config.json").write_text(json.dumps(document))
    with contextlib.suppress(NavzooError):
        read_config(folder)


@FUZZ
@given(values=_blocks(SimConfig))
def test_type_check_accepts_exactly_what_it_normalises(values):
    """Whatever passes the check holds the annotated types afterwards (tuples, ints, finite floats)."""
    try:
        config = SimConfig.from_dict(values)
    except NavzooError:
        return
    check_field_types(config)  # a normalised config passes again unchanged
    assert config == SimConfig.from_dict(dataclasses.asdict(config))


SIZES = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NEAR_THE_BOUND = st.integers(MAX_CONFIG_BYTES - 64, MAX_CONFIG_BYTES + 64) | st.integers(0, 4096)


@SIZES
@given(size=NEAR_THE_BOUND, depth=st.integers(0, 20_000))
def test_fuzzed_config_json_sizes_and_depths_end_in_navzoo_errors(tmp_path_factory, size, depth):
    """A config.json with an architecture nested `depth` lists deep, padded to `size` bytes when shorter:
    past the bound it is refused for its size; within it, it ends in a navzoo error."""
    folder = tmp_path_factory.mktemp("sized")
    head = '{"format": "navzoo-policy", "format_version": 1, "architecture": '
    text = head + "[" * depth + "]" * depth + "}"
    text += " " * max(0, size - len(text))
    (folder / "config.json").write_text(text)
    too_large = len(text) > MAX_CONFIG_BYTES
    with pytest.raises(
        WeightsFormatError, match="more than 1 MiB, the most read here" if too_large else None
    ):
        read_config(folder)


@SIZES
@given(size=NEAR_THE_BOUND)
def test_fuzzed_yaml_config_sizes_end_in_navzoo_errors(tmp_path_factory, size):
    path = tmp_path_factory.mktemp("sized") / "config.yaml"
    text = "model: navzoo-pointnav-blind\n"
    path.write_text(text + "#" * max(0, size - len(text) - 1) + "\n")
    if path.stat().st_size > MAX_CONFIG_BYTES:
        with pytest.raises(NavzooError, match="more than 1 MiB, the most read here"):
            load_config(str(path))
    else:
        assert load_config(str(path)).model == "navzoo-pointnav-blind"
