"""Training configuration: presets, key=value overrides, YAML files, round trips and BPS lr scaling."""

import math
from types import SimpleNamespace

import pytest
import torch
import yaml

from navzoo.errors import ConfigError
from navzoo.models import GOAL_SENSOR
from navzoo.train import trainer as trainer_module
from navzoo.train.config import TrainConfig, load_config
from navzoo.train.overrides import apply_override
from navzoo.train.presets import preset_names
from navzoo.train.stage_config import StageConfig, recipe_algorithms

PRESETS = preset_names()


def test_presets_are_found():
    assert "pointnav-blind" in PRESETS
    assert len(PRESETS) >= 5


# --- presets ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", PRESETS)
def test_preset_loads_and_its_policy_follows_the_sim(name):
    config = load_config(name)
    config.validate()
    assert config.sim.split == "train"
    policy = config.policy_config()
    if config.sim.task == "pointnav":
        assert GOAL_SENSOR in policy.sensors
    if policy.is_blind:
        assert policy.sensors == (GOAL_SENSOR,)  # no camera at all
        assert policy.resolution is None
        assert policy.visual_sensors == ()
    else:
        assert policy.resolution == tuple(config.sim.resolution)
        assert policy.visual_sensors == tuple(s for s in ("depth", "rgb") if s in config.sim.sensors)
        # habitat's PointNavResNetPolicy normalises exactly RGB inputs by running mean/var; its SimpleCNN
        # policy never does (it only rescales RGB by 1/255)
        resnet = policy.backbone != "simple_cnn"
        assert policy.normalize_visual_inputs == (resnet and "rgb" in config.sim.sensors)


def test_rgb_presets_on_resnets_normalize_visual_inputs():
    rgb = [name for name in PRESETS if "rgb" in name]
    resnet_rgb = [name for name in rgb if load_config(name).policy_config().backbone != "simple_cnn"]
    assert resnet_rgb
    for name in resnet_rgb:
        assert load_config(name).policy_config().normalize_visual_inputs is True


def test_policy_resolution_follows_sim_overrides():
    config = load_config("pointnav-depth-se-resnet9", ["sim.resolution=[32, 32]", "policy.hidden_size=16"])
    policy = config.policy_config()
    assert policy.resolution == (32, 32)
    assert policy.hidden_size == 16
    # the blind agent ignores cameras even if the simulator renders them
    blind = load_config("pointnav-blind", ["sim.sensors=[depth, rgb]"]).policy_config()
    assert blind.sensors == (GOAL_SENSOR,)


# --- overrides ---------------------------------------------------------------------------------------------


def test_override_values_are_parsed():
    # plain YAML 1.1 reads 1e-4 and 2e6 as strings (it wants a dot and a signed exponent)
    assert yaml.safe_load("1e-4") == "1e-4"
    config = load_config(
        "pointnav-blind",
        ["ppo.lr=1e-4", "total_frames=2e6", "sim.num_envs=8", "sim.scene_families=[apartment-s]"],
    )
    assert config.ppo.lr == 1e-4 and isinstance(config.ppo.lr, float)
    assert config.total_frames == 2_000_000 and isinstance(config.total_frames, int)
    assert config.sim.num_envs == 8
    assert config.sim.scene_families == ("apartment-s",)


def test_overrides_apply_in_order_and_make_blocks():
    data = {}
    apply_override(data, "ppo.lr=1e-3")
    apply_override(data, "ppo.lr=2e-3")
    apply_override(data, "ppo.use_linear_lr_decay=true")
    assert data == {"ppo": {"lr": 2e-3, "use_linear_lr_decay": True}}


@pytest.mark.parametrize(
    ("override", "field", "allowed"),
    [
        ("ppo.lrr=1", "ppo.lrr", "clip_param"),  # unknown PPO field: the message lists PPOConfig's
        ("foo=1", "foo", "total_frames"),  # unknown run-level field
        ("distributed.sink_frac=0.5", "distributed.sink_frac", "sync_frac"),
        ("sim.bogus=1", "sim.bogus", "scene_families"),
        ("policy.bogus=1", "policy", "hidden_size"),
    ],
)
def test_bad_key_names_the_allowed_fields(override, field, allowed):
    with pytest.raises(ConfigError) as err:
        load_config("pointnav-blind", [override])
    assert err.value.field == field
    assert allowed in str(err.value)


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ("ppo.clip_param=-1", "ppo.clip_param"),
        ("sim.split=val", "sim.split"),  # training only on the train split
        ("distributed.sync_frac=0", "distributed.sync_frac"),
        ("ppo.gamma=1.5", "ppo.gamma"),
        ("ppo.optimizer=sgd", "ppo.optimizer"),
        ("ppo.num_steps=0", "ppo.num_steps"),
        ("total_frames=0", "total_frames"),
    ],
)
def test_bad_value_raises(override, field):
    with pytest.raises(ConfigError) as err:
        load_config("pointnav-blind", [override])
    assert err.value.field == field


@pytest.mark.parametrize("override", ["ppo.lr", "=1", "ppo.lr.x=1"])
def test_malformed_override_raises(override):
    with pytest.raises(ConfigError) as err:
        load_config("pointnav-blind", [override])
    assert err.value.field == "override"


def test_fewer_envs_than_mini_batches_is_rejected():
    with pytest.raises(ConfigError):
        load_config("pointnav-blind", ["sim.num_envs=1", "ppo.num_mini_batch=2"])


# --- files --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".yaml", ".yml"])
def test_yaml_file(tmp_path, suffix):
    path = tmp_path / f"run{suffix}"
    path.write_text("model: pointnav-blind\nsim:\n  num_envs: 2\n  sensors: []\nppo:\n  lr: 1e-4\n")
    config = load_config(path, ["ppo.num_steps=8"])
    assert config.model == "pointnav-blind"
    assert config.sim.num_envs == 2
    assert config.ppo.lr == 1e-4  # numbers in files get the same parsing as overrides
    assert config.ppo.num_steps == 8
    assert load_config(str(path)) == load_config(path)


@pytest.mark.parametrize("source", ["missing.yaml", "no-such-preset"])
def test_missing_file_or_unknown_preset_lists_presets(tmp_path, source):
    target = tmp_path / source if source.endswith(".yaml") else source
    with pytest.raises(ConfigError) as err:
        load_config(target)
    assert err.value.field == "config"
    for name in PRESETS:
        assert name in str(err.value)


def test_invalid_yaml_raises(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("ppo: [unclosed\n")
    with pytest.raises(ConfigError):
        load_config(path)


# --- round trip ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", PRESETS)
def test_to_dict_round_trips_through_yaml(tmp_path, name):
    config = load_config(name)
    path = tmp_path / "train_config.yaml"
    path.write_text(yaml.safe_dump(config.to_dict(), sort_keys=False))  # as the trainer writes it
    assert load_config(path) == config


def test_round_trip_with_overrides(tmp_path):
    config = load_config(
        "pointnav-blind",
        [
            "policy.hidden_size=16",
            "ppo.lr=1e-4",
            "sim.scene_families=[apartment-s, office]",
            "rank_sim_overrides.1.scene_families=[office-l]",
        ],
    )
    assert config.rank_sim_overrides == {1: {"scene_families": ["office-l"]}}
    assert config.sim_for_rank(1).scene_families == ("office-l",)
    path = tmp_path / "train_config.yaml"
    path.write_text(yaml.safe_dump(config.to_dict(), sort_keys=False))
    loaded = load_config(path)
    assert loaded == config
    assert loaded.to_dict() == config.to_dict()


def test_from_dict_defaults():
    # an empty config is the default TrainConfig (simulator on the train split)
    assert TrainConfig.from_dict({}) == TrainConfig()


# --- BPS learning-rate scaling ---------------------------------------------------------------------------


def scaled_lr(monkeypatch, config: TrainConfig, world_size: int) -> float:
    """The learning rate Trainer.__init__ hands to PPO, without a process group or a simulator.

    `workers` is a stand-in for navzoo.train.distributed.Workers (world_size is only used for the batch
    size here; distributed=False keeps PPO from wrapping the policy in DistributedDataParallel).
    """
    monkeypatch.setattr(trainer_module, "BatchSim", lambda sim_config: None)
    workers = SimpleNamespace(
        rank=0,
        world_size=world_size,
        local_rank=0,
        local_world_size=1,
        device=torch.device("cpu"),
        store=None,
        distributed=False,
        is_main=True,
    )
    threads = torch.get_num_threads()
    try:
        with torch.random.fork_rng():
            trainer = trainer_module.Trainer(config, run_dir=None, workers=workers)
    finally:
        torch.set_num_threads(threads)
    assert trainer.learner.optimizer.param_groups[0]["lr"] == trainer.learner.base_lr
    return trainer.learner.base_lr


@pytest.mark.parametrize(
    ("overrides", "world_size", "expected"),
    [
        # blind preset: 32 steps x 64 envs / 2 mini-batches = 1024 frames per mini-batch:
        # 5e-4 * sqrt(1024 / 256) = 1e-3
        ([], 1, 1e-3),
        # 4 workers: 4096 frames per mini-batch (summed over workers): 5e-4 * sqrt(16) = 2e-3
        ([], 4, 2e-3),
        # 8 envs: 32 * 8 / 2 = 128 frames: 5e-4 * sqrt(0.5)
        (["sim.num_envs=8"], 1, 5e-4 * math.sqrt(0.5)),
        # reference_batch 1024 with 1024 frames: unscaled
        (["ppo.reference_batch=1024"], 1, 5e-4),
        # no scaling asked for
        (["ppo.lr_scaling=none"], 4, 5e-4),
    ],
)
def test_bps_lr_scaling(monkeypatch, overrides, world_size, expected):
    config = load_config("pointnav-blind", ["policy.hidden_size=16", "torch_threads=1", *overrides])
    assert scaled_lr(monkeypatch, config, world_size) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        (["stages.from_frames=4096", "stages.algorithm=kickstart"], "stages.0.algorithm"),  # no teacher
        (
            ["algorithm=dagger", "stages.from_frames=4096", "stages.ppo.num_steps=8"],
            "stages.0.ppo.num_steps",
        ),
        (["algorithm=dagger", "stages.from_frames=4096", "stages.ppo.lrr=1e-4"], "stages.0.ppo.lrr"),
        (["algorithm=dagger", "stages.from_frames=4096", "stages.ppo.lr=-1"], "stages.0.ppo.lr"),
        (["algorithm=dagger", "stages.from_frames=4096", "stages.algorithm=sac"], "stages.0.algorithm"),
        (["algorithm=dagger", "stages.from_frames=4096", "stages.lr=1e-4"], "stages.0.lr"),
        (
            ["algorithm=dagger", "stages.from_frames=4096", "stages.imitation.teacher=map-planner"],
            "stages.0.imitation.teacher",  # the teacher keeps its maps across the switch
        ),
        (
            ["algorithm=dagger", "stages.from_frames=4096", "stages.imitation.inflection_weight=0"],
            "stages.0.imitation.inflection_weight",
        ),
        (
            ["algorithm=dagger", "stages=[{from_frames: 4096}, {from_frames: 4096}]"],
            "stages.1.from_frames",
        ),
        (["algorithm=dagger", "stages=[{from_frames: -1}]"], "stages.0.from_frames"),
        (
            ["algorithm=dagger", "stages=[{from_frames: 4096}, {from_frames: 8192, algorithm: dagger}]"],
            "stages.1.algorithm",  # once a stage has let the teacher go, none can have it back
        ),
        (["algorithm=dagger", "stages=4096"], "stages"),
        # A stage changes the scene stream only (the rollout's shapes and the policy's inputs stay).
        (
            ["algorithm=dagger", "stages.from_frames=4096", "stages.sim.num_envs=8"],
            "stages.0.sim.num_envs",
        ),
        (
            ["algorithm=dagger", "stages.from_frames=4096", "stages.sim.scene_familes=[office]"],
            "stages.0.sim.scene_familes",
        ),
        (
            ["algorithm=dagger", "stages.from_frames=4096", "stages.sim.scene_families=[attic]"],
            "stages.0.sim.scene_families",
        ),
        (
            [
                "algorithm=dagger",
                "stages.from_frames=4096",
                "stages.rank_sim_overrides={1: {sensors: [rgb]}}",
            ],
            "stages.0.rank_sim_overrides.1.sensors",
        ),
        (
            [
                "algorithm=dagger",
                "stages.from_frames=4096",
                "stages.rank_sim_overrides={1: {min_geodesic: 40}}",
            ],
            "stages.0.rank_sim_overrides.1.min_geodesic",
        ),
    ],
)
def test_stages_block_errors_name_the_key(overrides, field):
    with pytest.raises(ConfigError) as error:
        load_config("pointnav-blind", overrides)
    assert error.value.field == field


def test_a_stage_conflicting_with_the_run_s_rank_override_is_named():
    """A stage's sim block that the run's rank override cannot follow names the override and the stage."""
    overrides = ["algorithm=dagger", "rank_sim_overrides={1: {min_geodesic: 5.0}}"]
    overrides += ["stages=[{from_frames: 4096, algorithm: dagger, sim: {max_geodesic: 4.0}}]"]
    with pytest.raises(ConfigError, match=r"\(in stage stages\.0\)$") as error:
        load_config("pointnav-blind", overrides)
    assert error.value.field == "rank_sim_overrides.1.min_geodesic"


def test_a_stage_s_rank_overrides_change_only_the_scene_stream_of_the_run_s():
    """What the run's override sets for a worker beyond its scenes (its environments, here) holds in a stage
    with rank overrides of its own; its scenes are the stage's."""
    config = load_config(
        "pointnav-blind",
        [
            "algorithm=dagger",
            "rank_sim_overrides={1: {num_envs: 8, scene_families: [apartment]}}",
            "stages=[{from_frames: 4096, algorithm: dagger,"
            " rank_sim_overrides: {1: {scene_families: [office]}}}]",
        ],
    )
    first, second = config.sim_for_rank(1, 0), config.sim_for_rank(1, 1)
    assert (first.num_envs, first.scene_families) == (8, ("apartment",))
    assert (second.num_envs, second.scene_families) == (8, ("office",))
    assert config.sim_for_rank(0, 1).scene_families == config.sim.scene_families
    assert config.overridden_ranks() == {1}


def test_a_stage_that_restates_the_simulator_keeps_its_seed():
    """A stage whose overrides give the simulator the stage before had (a default restated) goes on in the
    same environments: same config, same seed. Only a real change draws a seed of its own."""
    office = "{scene_families: [office]}"
    restated = "{scene_families: [office], min_geodesic: 1.0}"  # 1.0 is the default
    stages = f"stages=[{{from_frames: 4096, algorithm: dagger, rank_sim_overrides: {{1: {office}}}}},"
    stages += f" {{from_frames: 8192, algorithm: dagger, rank_sim_overrides: {{1: {restated}}}}}]"
    config = load_config("pointnav-blind", ["algorithm=dagger", stages])
    assert config.sim_for_rank(1, 2) == config.sim_for_rank(1, 1) != config.sim_for_rank(1, 0)
    assert config.sim_for_rank(0, 2) == config.sim_for_rank(0, 0)


def test_stages_block_changes_only_its_stage():
    config = load_config("navzoo-pointnav-depth-il", ["stages.from_frames=100000", "stages.ppo.lr=2.5e-4"])
    (stage,) = config.stages
    assert config.ppo.lr == 5e-4 and stage.ppo_config(config.ppo).lr == 2.5e-4
    assert stage.ppo_config(config.ppo).num_steps == config.ppo.num_steps


def test_stages_as_a_list_and_overrides_by_index():
    """A run can have more than two stages; an override names a stage by its index, and each stage's
    `ppo` and `imitation` blocks change the run's own for that stage alone."""
    stages = (
        "stages=[{from_frames: 4096, algorithm: dagger, ppo: {lr: 2.0e-4}},"
        " {from_frames: 8192, algorithm: kickstart, imitation: {kickstart_weight: 0.5}}]"
    )
    config = load_config("pointnav-blind", ["algorithm=dagger", stages, "stages.1.ppo.lr=1e-4"])
    settings = config.stage_settings()
    assert [(prefix, s.algorithm, s.ppo.lr) for prefix, s in settings] == [
        ("", "dagger", config.ppo.lr),
        ("stages.0.", "dagger", 2e-4),
        ("stages.1.", "kickstart", 1e-4),
    ]
    assert [s.imitation.kickstart_weight for _, s in settings] == [1.0, 1.0, 0.5]
    assert TrainConfig.from_dict(yaml.safe_load(yaml.safe_dump(config.to_dict()))) == config
    with pytest.raises(ConfigError, match=r"stages\.2\.ppo\.lr=1e-4.: allowed values are an index below 2"):
        load_config("pointnav-blind", ["algorithm=dagger", stages, "stages.2.ppo.lr=1e-4"])
    with pytest.raises(ConfigError, match=r"'stages' is a list: name an item, stages\.0\.from_frames"):
        load_config("pointnav-blind", ["algorithm=dagger", stages, "stages.from_frames=0"])
    assert load_config("pointnav-blind", ["algorithm=dagger", stages, "stages=[]"]).stages == ()


def test_one_stage_as_a_mapping():
    """A saved config or YAML with `stages` as one mapping (as the shipped blind model's record holds it)
    reads as a one-stage list; from_frames 0 there means no later stage."""
    one = {"from_frames": 4096, "algorithm": "kickstart", "ppo": {"lr": 1e-4}}
    config = TrainConfig.from_dict({"model": "pointnav-blind", "algorithm": "dagger", "stages": one})
    assert config.stages == (StageConfig(**one),)
    none = TrainConfig.from_dict(
        {"model": "pointnav-blind", "stages": {"from_frames": 0, "algorithm": "ppo"}}
    )
    assert none.stages == ()
    assert recipe_algorithms({"algorithm": "dagger", "stages": one}) == ["dagger", "kickstart"]
    assert recipe_algorithms({"algorithm": "ppo", "stages": {"from_frames": 0}}) == ["ppo"]
    assert recipe_algorithms({"algorithm": "dagger", "stages": [one, {**one, "from_frames": 8192}]}) == [
        "dagger",
        "kickstart",
        "kickstart",
    ]


def test_a_run_that_maps_on_the_cpu_trains_there(monkeypatch):
    """With device auto, a run with the map-planner teacher or the seen_map sensor (numba kernels on the
    CPU) trains on the CPU, where a GPU machine would otherwise put the simulator on CUDA; asking for CUDA
    names the teacher."""
    assert load_config("navzoo-pointnav-depth").worker_device() == "cpu"
    mapped = ["model=pointnav-simple-cnn", "sim.sensors=[depth,seen_map]", "sim.resolution=[64,64]"]
    assert load_config("pointnav-blind", mapped).worker_device() == "cpu"
    assert load_config("navzoo-pointnav-depth-il").worker_device() == "auto"  # the shortest-path teacher
    assert load_config("navzoo-pointnav-blind").worker_device() == "auto"
    with pytest.raises(ConfigError, match=r"'cpu' or 'auto' with imitation\.teacher map-planner") as error:
        load_config("navzoo-pointnav-depth", ["device=cuda"])
    assert error.value.field == "device"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # a GPU machine's, for the simulator
    with pytest.raises(ConfigError, match=r"are 'cpu' with imitation\.teacher map-planner") as error:
        load_config("navzoo-pointnav-depth", ["sim.device=cuda"])  # 'auto' is no simulator device
    assert error.value.field == "sim.device"
    with pytest.raises(ConfigError, match=r"'cpu' or 'auto' with the seen_map sensor") as error:
        load_config("pointnav-blind", [*mapped, "device=cuda"])  # refused here, not once workers start
    assert error.value.field == "device"
