"""End-to-end tests of `navzoo train` as it runs for real: one process, or two workers under torchrun (gloo).

The tests run the trainer with a tiny blind PointNav config and check what the run leaves behind: log.jsonl,
checkpoints/, the exported model. Where a test needs processes of its own (torchrun's workers, a kill, a
signal, a resume as after a crash) it starts the CLI, or tests/scripts/train_worker.py, which runs the real
Trainer and only adds a parameter dump and an artificially slow simulator on one worker, in subprocesses.
Other runs call the CLI's entry point or train() in the test's process, since starting Python and torch is
most of a tiny run's time.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import time
import weakref
from pathlib import Path
from statistics import median
from unittest import mock

import pytest
import torch
from safetensors.torch import load_file

import navzoo
from navzoo.cli.main import main as navzoo_main
from navzoo.errors import ConfigError
from navzoo.models.weights import save_pretrained
from navzoo.train import checkpoint as ckpt
from navzoo.train.callbacks import TrainerCallback
from navzoo.train.config import load_config
from navzoo.train.trainer import train

SCRIPTS = Path(__file__).parent / "scripts"
TRAIN_WORKER = SCRIPTS / "train_worker.py"
PRESET = "pointnav-blind"
NUM_ENVS = 4
NUM_STEPS = 16
FRAMES_PER_UPDATE = NUM_ENVS * NUM_STEPS  # per worker
TINY = [
    "policy.hidden_size=32",
    "policy.num_recurrent_layers=1",
    f"sim.num_envs={NUM_ENVS}",
    f"ppo.num_steps={NUM_STEPS}",
    "sim.scene_families=[apartment-s]",
    "torch_threads=1",
    "checkpoint_every=2",
]
# Adam (the preset has Lamb) with two epochs of two mini-batches: optimiser state that a resume must restore.
ADAM = ["ppo.optimizer=adam", "ppo.lr_scaling=none", "ppo.ppo_epoch=2", "ppo.num_mini_batch=2"]


# --- helpers ---------------------------------------------------------------------------------------------
# What a launcher (torchrun, SLURM) around the test run would set; a run started by a test sets its own.
LAUNCHER_VARIABLES = (
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
    "TORCHELASTIC_RESTART_COUNT",
    "TORCH_DISABLE_SHARE_RDZV_TCP_STORE",
)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARIABLES}
    env.update(OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1", TQDM_DISABLE="1")
    env.update(extra)
    return env


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "navzoo.cli.main", "train", *args]


def _torchrun(*args: str, nproc: int = 2, max_restarts: int = 0) -> list[str]:
    """torchrun through this interpreter; --standalone picks free ports for the rendezvous and the group."""
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc-per-node={nproc}",
        f"--max-restarts={max_restarts}",
        "--monitor-interval=0.5",
        *args,
    ]


def _start(cmd: list[str], cwd: Path, **env: str) -> subprocess.Popen:
    # Its own session, so that a timeout can stop torchrun and all its workers together.
    return subprocess.Popen(
        cmd,
        cwd=cwd,
        env=_env(**env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _stop_group(proc: subprocess.Popen) -> None:
    """SIGKILL `proc`, its process group and all its descendants: torchrun starts every worker in a session
    of its own, and a worker left behind would hold the output pipes open."""
    if proc.poll() is None:
        for pid in [*_descendants(proc.pid), proc.pid]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _finish(proc: subprocess.Popen, timeout: float, expect_rc: int | None = 0) -> tuple[str, str]:
    """Wait for `proc`; on a timeout or an unexpected exit code fail with its stdout and stderr."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _stop_group(proc)
        out, err = proc.communicate(timeout=30)
        pytest.fail(f"{proc.args} ran past {timeout} s\n--- stdout\n{out}\n--- stderr\n{err[-20000:]}")
    if expect_rc is not None and proc.returncode != expect_rc:
        pytest.fail(
            f"{proc.args} exited {proc.returncode}, expected {expect_rc}\n"
            f"--- stdout\n{out}\n--- stderr\n{err[-20000:]}"
        )
    return out, err


def _run(cmd: list[str], cwd: Path, timeout: float = 120, expect_rc: int | None = 0) -> tuple[str, str]:
    return _finish(_start(cmd, cwd), timeout, expect_rc)


def _in_process(*argv: str, expect_rc: int = 0) -> tuple[str, str]:
    """`navzoo ARGV` through the command's entry point in this process; returns (stdout, stderr). The
    process's environment, torch threads and random state are as they were afterwards."""
    out, err = io.StringIO(), io.StringIO()
    threads = torch.get_num_threads()
    try:
        with (
            mock.patch.dict(os.environ, _env(), clear=True),
            torch.random.fork_rng(devices=[]),
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
        ):
            rc = navzoo_main(list(argv))
    except SystemExit as stop:  # argparse's usage errors
        rc = 0 if stop.code is None else stop.code
    finally:
        torch.set_num_threads(threads)  # the trainer sets the process's threads
    command = f"navzoo {' '.join(argv)}"
    assert rc == expect_rc, (
        f"{command} returned {rc}, expected {expect_rc}\n{out.getvalue()}\n{err.getvalue()}"
    )
    return out.getvalue(), err.getvalue()


def _log(run_dir: Path) -> tuple[list[dict], list[dict]]:
    """(metric lines, event lines) of a run's log.jsonl."""
    rows = [json.loads(line) for line in (run_dir / "log.jsonl").read_text().splitlines() if line.strip()]
    return [r for r in rows if "event" not in r], [r for r in rows if "event" in r]


def _newest(run_dir: Path) -> dict:
    path = ckpt.latest_checkpoint(run_dir)
    assert path is not None, f"no checkpoint in {run_dir}"
    return torch.load(path, map_location="cpu", weights_only=True)


def _wait_for_checkpoint(run_dir: Path, proc: subprocess.Popen, timeout: float) -> Path:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = ckpt.latest_checkpoint(run_dir)
        if found is not None:
            return found
        if proc.poll() is not None:
            out, err = proc.communicate(timeout=30)
            pytest.fail(f"training exited {proc.returncode} before a checkpoint\n{out}\n{err[-20000:]}")
        time.sleep(0.02)
    _stop_group(proc)
    out, err = proc.communicate(timeout=30)
    pytest.fail(f"no checkpoint after {timeout} s\n{out}\n{err[-20000:]}")


def _children(pid: int) -> list[int]:
    found = []
    with contextlib.suppress(FileNotFoundError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                found += [int(p) for p in (task / "children").read_text().split()]
    return found


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        children = _children(todo.pop())
        found += children
        todo += children
    return found


def _worker_pids(torchrun_pid: int, count: int, timeout: float = 30) -> dict[int, int]:
    """{rank: pid} of torchrun's worker processes, read from their environment."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ranks = {}
        for pid in _children(torchrun_pid):
            try:
                environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            except (FileNotFoundError, ProcessLookupError):
                continue
            for item in environ:
                if item.startswith(b"RANK="):
                    ranks[int(item[5:])] = pid
        if len(ranks) == count:
            return ranks
        time.sleep(0.05)
    pytest.fail(f"torchrun {torchrun_pid} has no {count} workers: {ranks}")


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.detach().cpu().contiguous().reshape(-1).view(torch.uint8)


def _assert_same(a, b, where: str = "") -> None:
    """Nested dicts/lists of tensors and numbers are bitwise equal."""
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor), where
        assert a.dtype == b.dtype and a.shape == b.shape, where
        assert _bits(a).equal(_bits(b)), where
    elif isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), f"{where}: {sorted(a)} != {sorted(b)}"
        for k in a:
            _assert_same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list | tuple):
        assert isinstance(b, list | tuple) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _assert_same(x, y, f"{where}[{i}]")
    else:
        assert a == b or (a != a and b != b), f"{where}: {a!r} != {b!r}"  # NaN == NaN here


def _assert_counters(state: dict, updates: int, frames: int) -> None:
    assert state["counters"]["update"] == updates
    assert state["counters"]["frames"] == frames


# --- 1. parameters stay identical across workers ---------------------------------------------------------
@pytest.mark.slow
def test_two_workers_keep_identical_parameters(tmp_path):
    run_dir = tmp_path / "run"
    updates = 4
    _run(
        _torchrun(
            str(TRAIN_WORKER),
            PRESET,
            *TINY,
            *ADAM,
            "distributed.sync_frac=1.0",
            f"total_frames={updates * 2 * FRAMES_PER_UPDATE}",
            "--run-dir",
            str(run_dir),
            "--dump-params",
        ),
        tmp_path,
    )
    rank0 = torch.load(run_dir / "rank0.pt", weights_only=True)
    rank1 = torch.load(run_dir / "rank1.pt", weights_only=True)
    assert rank0["updates"] == rank1["updates"] == updates
    _assert_same(rank0["initial"], rank1["initial"], "initial")
    _assert_same(rank0["final"], rank1["final"], "final")
    changed = [k for k in rank0["final"] if not torch.equal(rank0["final"][k], rank0["initial"][k])]
    assert len(changed) > len(rank0["final"]) // 2, f"training changed only {changed}"
    # What the main worker saved is the same model.
    state = _newest(run_dir)
    _assert_counters(state, updates, updates * 2 * FRAMES_PER_UPDATE)
    _assert_same(state["model"], rank0["final"], "checkpoint")
    exported = load_file(run_dir / "model.safetensors")
    for k, v in exported.items():
        assert torch.equal(v, rank0["final"][k]), k
    # Each worker steps its own environments: different scene streams, different episodes.
    assert state["world_size"] == 2 and len(state["workers"]) == 2
    sim0, sim1 = (w["sim"]["tensors"] for w in state["workers"])
    assert not torch.equal(sim0["pos"], sim1["pos"])
    assert not torch.equal(sim0["goal"], sim1["goal"])


# --- 2. rollout preemption -------------------------------------------------------------------------------
@pytest.mark.slow
def test_preemption_stops_waiting_for_a_slow_worker(tmp_path):
    num_steps, slow_s = 32, 0.05
    base = [PRESET, *TINY, f"ppo.num_steps={num_steps}", "checkpoint_every=100"]
    per_update = NUM_ENVS * num_steps  # frames of one worker's full rollout

    def run(name: str, sync_frac: float, updates: int) -> list[dict]:
        run_dir = tmp_path / name
        _run(
            _torchrun(
                str(TRAIN_WORKER),
                *base,
                f"distributed.sync_frac={sync_frac}",
                f"total_frames={updates * 2 * per_update}",
                "--run-dir",
                str(run_dir),
                "--slow-rank=1",
                f"--slow-step-s={slow_s}",
            ),
            tmp_path,
            timeout=180,
        )
        return _log(run_dir)[0]

    preempted = run("preempted", 0.5, 8)  # about 12 updates of (32 + 8) steps
    waiting = run("waiting", 1.0, 5)
    summary = [
        (r["train/update"], r["rollout/steps_min"], r["rollout/steps_mean"], r["rollout/preempted_workers"])
        for r in preempted
    ]
    # Never below a quarter rollout, and the straggler is cut short on most updates.
    assert all(r["rollout/steps_min"] >= num_steps // 4 for r in preempted), summary
    cut = [r for r in preempted if r["rollout/preempted_workers"] >= 1]
    assert len(cut) >= 0.6 * len(preempted), summary
    assert all(r["rollout/steps_mean"] < num_steps for r in cut), summary
    assert median(r["rollout/steps_mean"] for r in preempted) < num_steps, summary
    # The fast worker stops the slow one as soon as it may: at the quarter mark, give or take a few steps.
    assert median(r["rollout/steps_min"] for r in preempted) <= num_steps // 4 + 4, summary
    # Without preemption everyone collects the whole rollout, and waits for the straggler to do it.
    assert all(r["rollout/steps_min"] == num_steps for r in waiting)
    assert all(r["rollout/preempted_workers"] == 0 for r in waiting)
    # The first update includes start-up skew between the workers; compare the rest.
    fast = median(r["perf/update_s"] for r in preempted[1:])
    slow = median(r["perf/update_s"] for r in waiting[1:])
    # Expected about 8 * 50 ms against 32 * 50 ms of the straggler's sleeps alone.
    assert slow > 1.8 * fast, (fast, slow)


# --- 3. resume equivalence -------------------------------------------------------------------------------
def _resume_equivalence(
    tmp_path: Path, nproc: int, total: int, stop_at: int, extra: tuple[str, ...] = ()
) -> None:
    """`total` updates in one go equal `stop_at` updates, a stop, and a resume for the rest. With one worker
    the two runs before the stop go in this process and the resume in a fresh one, as after a crash; more
    workers run under torchrun."""
    frames = nproc * FRAMES_PER_UPDATE
    common = [*TINY, *ADAM, "distributed.sync_frac=1.0", "seed=3", *extra]
    one_go, split = tmp_path / "one_go", tmp_path / "split"
    runs = [
        (PRESET, *common, f"total_frames={total * frames}", "--run-dir", str(one_go)),
        (PRESET, *common, f"total_frames={stop_at * frames}", "--run-dir", str(split)),
    ]
    # Only the new total: the rest of the config comes from the run folder.
    resume_args = (f"total_frames={total * frames}", "--run-dir", str(split), "--resume")
    if nproc == 1:
        for args in runs:
            _in_process("train", *args)
        _assert_counters(_newest(split), stop_at, stop_at * frames)
        _run(_cli(*resume_args), tmp_path, timeout=150)
    else:
        # The uninterrupted run and the first part of the split one side by side: there are 2 cores.
        first = [
            _start(_torchrun("-m", "navzoo.cli.main", "train", *args, nproc=nproc), tmp_path) for args in runs
        ]
        try:
            for proc in first:
                _finish(proc, 150)
        finally:
            for proc in first:
                _stop_group(proc)
        _assert_counters(_newest(split), stop_at, stop_at * frames)
        _run(_torchrun("-m", "navzoo.cli.main", "train", *resume_args, nproc=nproc), tmp_path, timeout=150)

    a, b = _newest(one_go), _newest(split)
    _assert_counters(a, total, total * frames)
    _assert_counters(b, total, total * frames)
    assert a["counters"]["episodes"] == b["counters"]["episodes"]
    _assert_same(a["model"], b["model"], "model")
    _assert_same(a["ppo"], b["ppo"], "ppo")  # Adam's moments and step counts
    _assert_same(a["workers"], b["workers"], "workers")  # simulators, recurrent carry, RNG
    _assert_same(a["window"], b["window"], "window")
    _assert_same(a["config"], b["config"], "config")
    model_a, model_b = load_file(one_go / "model.safetensors"), load_file(split / "model.safetensors")
    _assert_same(model_a, model_b, "model.safetensors")
    # The logged losses of every update match too.
    rows_a, events_a = _log(one_go)
    rows_b, events_b = _log(split)
    assert [r["frames"] for r in rows_a] == [r["frames"] for r in rows_b]
    for ra, rb in zip(rows_a, rows_b, strict=True):
        for key in ra:
            if key.startswith(("loss/", "episode/", "rollout/steps", "train/")):
                _assert_same(ra[key], rb[key], f"update {ra['train/update']} {key}")
    assert [e["event"] for e in events_a if e["event"] != "checkpoint"] == ["start"]
    assert [e["event"] for e in events_b if e["event"] != "checkpoint"] == ["start", "resume"]
    resume = next(e for e in events_b if e["event"] == "resume")
    assert (resume["update"], resume["frames"]) == (stop_at, stop_at * frames)


def test_resume_equals_uninterrupted_run(tmp_path):
    _resume_equivalence(tmp_path, nproc=1, total=6, stop_at=3)


def test_imitation_resume_equals_uninterrupted_run(tmp_path):
    """DAgger's teacher draws, its decaying share, its labels and its bearing head are restored exactly too
    (the share is still above 0 at the stop, so both the teacher and the learner drive across it)."""
    extra = (
        "algorithm=dagger",
        f"imitation.teacher_decay_frames={5 * FRAMES_PER_UPDATE}",
        "imitation.bearing_weight=0.5",
    )
    _resume_equivalence(tmp_path, nproc=1, total=6, stop_at=3, extra=extra)


def test_imitation_of_the_map_planner_resumes_exactly(tmp_path):
    """The map-planner teacher remembers what each agent has seen; its maps travel in the checkpoint (the
    stop falls mid-episode). The learner sees RGB, so the simulator renders depth for the teacher and the
    depth head alone; the map head learns the teacher's maps."""
    extra = (
        "algorithm=dagger",
        "imitation.teacher=map-planner",
        "imitation.depth_weight=1",
        "imitation.map_weight=1",
        f"imitation.teacher_decay_frames={5 * FRAMES_PER_UPDATE}",
        "model=pointnav-simple-cnn",
        "sim.sensors=[rgb]",
        "sim.resolution=[64,64]",
    )
    _resume_equivalence(tmp_path, nproc=1, total=6, stop_at=3, extra=extra)
    assert _newest(tmp_path / "one_go")["workers"][0]["teacher"]["solid"].any()
    config = json.loads((tmp_path / "one_go" / "config.json").read_text())
    assert config["architecture"]["sensors"] == ["rgb", "pointgoal_with_gps_compass"]


def test_distillation_of_a_policy_resumes_exactly(tmp_path):
    """The policy teacher's recurrent state, previous actions and draws travel in the checkpoint (the stop
    falls mid-episode, with the teacher driving some of the steps)."""
    extra = (
        "algorithm=dagger",
        "imitation.teacher=policy",
        "imitation.teacher_model=navzoo-pointnav-blind",
        f"imitation.teacher_decay_frames={5 * FRAMES_PER_UPDATE}",
    )
    _resume_equivalence(tmp_path, nproc=1, total=6, stop_at=3, extra=extra)
    assert _newest(tmp_path / "one_go")["workers"][0]["teacher"]["hidden"].abs().sum() > 0
    # The model records its teacher and how that was trained.
    teacher = json.loads((tmp_path / "split" / "config.json").read_text())["provenance"]["distilled_from"]
    assert teacher["model"] == "navzoo-pointnav-blind"
    assert teacher["frames"] == navzoo.load("navzoo-pointnav-blind").provenance["frames"] > 0


def test_a_learner_reading_the_seen_map_resumes_exactly(tmp_path):
    """The seen_map sensor's maps and visited cells travel in the simulator's checkpoint, and the
    map-planner teacher plans on the same maps."""
    extra = (
        "algorithm=dagger",
        "imitation.teacher=map-planner",
        f"imitation.teacher_decay_frames={5 * FRAMES_PER_UPDATE}",
        "model=pointnav-simple-cnn",
        "sim.sensors=[depth,seen_map]",
        "sim.seen_map_size=16",
        "sim.resolution=[64,64]",
    )
    _resume_equivalence(tmp_path, nproc=1, total=6, stop_at=3, extra=extra)
    assert _newest(tmp_path / "one_go")["workers"][0]["sim"]["seen_map"]["visited"].any()
    config = json.loads((tmp_path / "one_go" / "config.json").read_text())
    assert config["architecture"]["sensors"] == ["depth", "seen_map", "pointgoal_with_gps_compass"]
    assert (config["architecture"]["seen_map_size"], config["architecture"]["seen_map_cell"]) == (16, 0.5)


def test_a_run_reading_the_seen_map_starts_from_a_policy_without_it(tmp_path):
    """init_from a model of the run's architecture without the seen_map: every weight comes from it, the
    map's columns of the recurrent core's input start at zero, and the recipe says the input was added."""
    mapped = [
        *TINY,
        "model=pointnav-simple-cnn",
        "sim.sensors=[depth,seen_map]",
        "sim.seen_map_size=16",
        "sim.resolution=[64,64]",
        f"total_frames={FRAMES_PER_UPDATE}",
    ]
    without = load_config(PRESET, mapped).policy_config().without_seen_map()
    source = tmp_path / "source"
    save_pretrained(navzoo.models.PointNavPolicy(without), source)
    at_start = {}

    class Remember(TrainerCallback):
        def on_train_start(self, trainer):
            at_start.update({k: v.clone() for k, v in trainer.policy.state_dict().items()})

    run_dir = tmp_path / "run"
    train(load_config(PRESET, [*mapped, f"init_from={source}"]), run_dir, callbacks=[Remember()])

    before = load_file(source / "model.safetensors")
    inputs = "net.state_encoder.rnn.weight_ih_l0"
    assert all(torch.equal(at_start[k], v) for k, v in before.items() if k != inputs)
    grown, columns = at_start[inputs], slice(32, 32 + 256)  # after the camera's 32-wide embedding
    assert torch.equal(grown[:, :32], before[inputs][:, :32])
    assert torch.equal(grown[:, columns.stop :], before[inputs][:, 32:])
    assert not grown[:, columns].any()
    assert {k for k in at_start.keys() - before.keys()} == {k for k in at_start if "map_encoder" in k}
    recipe = json.loads((run_dir / "config.json").read_text())["provenance"]["initialised_from"]
    assert (recipe["source"], recipe["added_inputs"]) == (str(source), ["seen_map"])

    other = tmp_path / "other"  # without the map and of another width: the error names the width alone
    save_pretrained(navzoo.models.PointNavPolicy(without.replace(hidden_size=64)), other)
    with pytest.raises(ConfigError, match="hidden_size: 64 there, 32 here") as refused:
        train(load_config(PRESET, [*mapped, f"init_from={other}"]), tmp_path / "refused")
    assert "seen_map_size" not in str(refused.value)


@pytest.mark.parametrize("second", ["ppo", "dagger", "kickstart"])
def test_a_second_stage_in_one_run_resumes_across_the_switch(tmp_path, second):
    """stages.from_frames hands the run from imitation to its second stage with a fresh optimiser: DD-PPO
    (the critic warming up first), imitation at another learning rate, or DD-PPO kickstarted by the same
    teacher, which labels on but no longer drives; a stop after the switch resumes in that stage, exactly."""
    extra = (
        "algorithm=dagger",
        f"imitation.teacher_decay_frames={2 * FRAMES_PER_UPDATE}",
        f"stages.from_frames={4 * FRAMES_PER_UPDATE}",
        f"stages.algorithm={second}",
        "stages.ppo.lr=1e-3",
        *(["stages.ppo.critic_warmup_updates=1"] if second in ("ppo", "kickstart") else []),
        *(["imitation.bearing_weight=0.5"] if second == "dagger" else []),  # its head goes on learning
    )
    _resume_equivalence(tmp_path, nproc=1, total=6, stop_at=5, extra=extra)
    rows, _ = _log(tmp_path / "one_go")
    assert all("train/teacher_share" in r for r in rows[:4])
    assert all(r["train/lr"] == pytest.approx(1e-3) for r in rows[4:])
    if second == "ppo":
        assert not any("train/teacher_share" in r for r in rows[4:])
        assert all("loss/teacher_prob" in r for r in rows[:4]) and all(
            "loss/clip_fraction" in r for r in rows[4:]
        )
    elif second == "dagger":
        assert all("loss/teacher_prob" in r for r in rows)
    else:
        assert all(r["train/teacher_share"] == 0.0 for r in rows[4:])
        assert all(
            {"loss/imitation", "loss/teacher_prob", "loss/clip_fraction"} <= r.keys() for r in rows[4:]
        )
    provenance = json.loads((tmp_path / "one_go" / "config.json").read_text())["provenance"]
    assert [(s["algorithm"], s["frames"]) for s in provenance["stages"]] == [
        ("dagger", 4 * FRAMES_PER_UPDATE),
        (second, 2 * FRAMES_PER_UPDATE),
    ]


def test_three_stages_in_one_run_resume_inside_the_middle_one(tmp_path):
    """A run of three stages (DAgger, DAgger at another rate with its head learning on, then kickstarting
    with the head off and its own teacher weight) stopped in the middle stage resumes there, exactly, and
    switches to the third on time; the model card's stages list all three."""
    f = FRAMES_PER_UPDATE
    stages = (
        f"stages=[{{from_frames: {2 * f}, algorithm: dagger, ppo: {{lr: 1.0e-3}}}},"
        f" {{from_frames: {4 * f}, algorithm: kickstart, ppo: {{lr: 5.0e-4, critic_warmup_updates: 1}},"
        " imitation: {bearing_weight: 0.0, kickstart_weight: 0.5}}]"
    )
    extra = (
        "algorithm=dagger",
        f"imitation.teacher_decay_frames={2 * f}",
        "imitation.bearing_weight=0.5",
        stages,
    )
    _resume_equivalence(tmp_path, nproc=1, total=6, stop_at=3, extra=extra)
    rows, _ = _log(tmp_path / "one_go")
    first_lr = load_config(PRESET).ppo.lr
    assert [r["train/lr"] for r in rows] == pytest.approx([first_lr] * 2 + [1e-3] * 2 + [5e-4] * 2)
    assert all("loss/bearing" in r for r in rows[:4]) and not any("loss/bearing" in r for r in rows[4:])
    assert all(r["train/teacher_share"] == 0.0 and "loss/clip_fraction" in r for r in rows[4:])
    provenance = json.loads((tmp_path / "one_go" / "config.json").read_text())["provenance"]
    assert [(s["algorithm"], s["frames"]) for s in provenance["stages"]] == [
        ("dagger", 2 * f),
        ("dagger", 2 * f),
        ("kickstart", 2 * f),
    ]


@pytest.mark.parametrize("stop_at", [2, 3])
def test_a_stage_on_other_scenes_restarts_the_environments_and_resumes_exactly(tmp_path, stop_at):
    """A stage with a scene stream of its own (its `sim` block, and rank_sim_overrides standing for the
    run's) moves the worker into a new simulator when it begins: every environment starts a new episode
    there, with its own seed. The stage after it, on the same scenes, goes on in the same environments. A
    stop on the switch's update, and one after it, resume exactly."""
    f = FRAMES_PER_UPDATE
    other_scenes = "sim: {max_geodesic: 6.0}, rank_sim_overrides: {0: {scene_families: [apartment]}}"
    stages = (
        f"stages=[{{from_frames: {2 * f}, algorithm: dagger, {other_scenes}}},"
        f" {{from_frames: {4 * f}, algorithm: kickstart, ppo: {{critic_warmup_updates: 1}}, {other_scenes}}}]"
    )
    extra = ("algorithm=dagger", f"imitation.teacher_decay_frames={2 * f}", stages)
    _resume_equivalence(tmp_path, nproc=1, total=6, stop_at=stop_at, extra=extra)
    sim = _newest(tmp_path / "one_go")["workers"][0]["sim"]
    assert sim["config"]["scene_families"] == ["apartment"]
    assert sim["config"]["seed"] != 3000  # the first stage's: seed * 1000 + rank

    sims = []  # the simulator of every update

    class Watch(TrainerCallback):
        def on_update_end(self, trainer, metrics):
            sims.append(trainer.sim)

    config = load_config(PRESET, [*TINY, *ADAM, "seed=3", f"total_frames={6 * f}", *extra])
    train(config, tmp_path / "watched", callbacks=[Watch()])
    assert [sims.index(sim) for sim in sims] == [0, 0, 2, 2, 2, 2]  # a new one with stage 1, kept by stage 2
    assert sims[2].config.scene_families == ("apartment",) and sims[2].config.max_geodesic == 6.0
    assert not set(sims[2].env_seeds.tolist()) & set(sims[0].env_seeds.tolist())


def test_overrides_for_workers_the_run_lacks_are_reported(tmp_path, capsys):
    """A preset made for two workers (the depth preset's large offices on worker 1) still trains on one, and
    says which settings it leaves out and how to run with them."""
    late = f"stages=[{{from_frames: {FRAMES_PER_UPDATE}, rank_sim_overrides: {{2: {{max_geodesic: 6.0}}}}}}]"
    overrides = ["rank_sim_overrides={1: {scene_families: [office]}}", "algorithm=dagger", late]
    config = load_config(PRESET, [*TINY, *ADAM, f"total_frames={FRAMES_PER_UPDATE}", *overrides])
    train(config, tmp_path / "run")
    out = capsys.readouterr().out
    assert "rank_sim_overrides name worker ranks [1, 2] and this run has 1 worker(s)" in out
    assert "torchrun --nproc-per-node 3" in out


def test_a_checkpoint_with_a_one_mapping_stage_and_tuple_aux_tasks_resumes(tmp_path):
    """Checkpoints whose config holds `stages` as one mapping with no algorithm in it, and ppo.aux_tasks
    pickled as a tuple, resume."""
    run_dir = tmp_path / "run"
    config = load_config(PRESET, [*TINY, *ADAM, f"total_frames={2 * FRAMES_PER_UPDATE}"])
    train(config, run_dir)
    path = ckpt.latest_checkpoint(run_dir)
    state = torch.load(path, map_location="cpu", weights_only=True)
    state["config"]["stages"] = {"from_frames": 0}  # one mapping, and no algorithm in it
    state["config"]["ppo"]["aux_tasks"] = ()
    torch.save(state, path)
    result = train(config.replace(total_frames=3 * FRAMES_PER_UPDATE), run_dir, resume=True)
    assert result.frames == 3 * FRAMES_PER_UPDATE


@pytest.mark.slow
def test_resume_equals_uninterrupted_run_two_workers(tmp_path):
    _resume_equivalence(tmp_path, nproc=2, total=4, stop_at=2)


# --- 4. a killed worker under torchrun --max-restarts ----------------------------------------------------
# torchrun's agent lends its rendezvous TCPStore to the workers and keeps it across restarts with the
# previous attempt's keys in it; init_workers scopes the process group's keys per attempt, so a restarted
# worker never reads a killed worker's gloo address. These tests run with torchrun's defaults.


def _kill_one_worker(tmp_path: Path, run_dir: Path, cmd: list[str], victim: int, timeout: float, **env):
    """Start `cmd` (torchrun), SIGKILL worker `victim` once a checkpoint exists, wait for torchrun; returns
    the update of the checkpoint seen before the kill."""
    proc = _start(cmd, tmp_path, **env)
    try:
        workers = _worker_pids(proc.pid, 2)
        first = _wait_for_checkpoint(run_dir, proc, timeout=90)
        os.kill(workers[victim], signal.SIGKILL)
        _finish(proc, timeout)
    finally:
        _stop_group(proc)
    return int(ckpt._NAME.match(first.name).group(1))


def _assert_resumed_and_finished(run_dir: Path, first_checkpoint: int, updates: int, total: int) -> None:
    rows, events = _log(run_dir)
    logged = {e["update"] for e in events if e["event"] == "checkpoint"}
    resumes = [e for e in events if e["event"] == "resume"]
    assert resumes, events
    assert all(e["restart"] >= 1 for e in resumes), resumes
    resumed_at = resumes[0]["update"]
    # From a checkpoint (the one seen before the kill, or a newer one), not from scratch. The kill may land
    # between the checkpoint's rename and its log line, so the one seen need not have an event.
    assert resumed_at >= first_checkpoint and resumed_at in logged | {first_checkpoint}, (resumed_at, logged)
    assert resumes[0]["frames"] == resumed_at * 2 * FRAMES_PER_UPDATE
    assert rows[-1]["frames"] == total and rows[-1]["train/update"] == updates
    state = _newest(run_dir)
    _assert_counters(state, updates, total)
    assert ckpt.latest_checkpoint(run_dir).name == f"ckpt-{updates:09d}.pt"
    model = navzoo.load(run_dir)
    exported = load_file(run_dir / "model.safetensors")
    for k, v in model.state_dict().items():
        assert torch.equal(v, exported[k]) and torch.equal(v, state["model"][k]), k
    leftovers = [p.name for p in (run_dir / ckpt.CHECKPOINT_DIR).iterdir() if p.name.startswith(".")]
    assert not leftovers, leftovers
    assert not (run_dir / ".export").exists()


@pytest.mark.slow
@pytest.mark.parametrize("victim", [1, 0], ids=["rank1", "rank0"])
def test_killed_worker_restarts_from_last_checkpoint(tmp_path, victim):
    run_dir = tmp_path / "run"
    updates = 40
    total = updates * 2 * FRAMES_PER_UPDATE
    cmd = _torchrun(
        "-m",
        "navzoo.cli.main",
        "train",
        PRESET,
        *TINY,
        "distributed.sync_frac=1.0",
        f"total_frames={total}",
        "--run-dir",
        str(run_dir),
        max_restarts=2,
    )
    first = _kill_one_worker(tmp_path, run_dir, cmd, victim, timeout=150)
    _assert_resumed_and_finished(run_dir, first, updates, total)


@pytest.mark.slow
def test_restart_with_the_default_shared_store(tmp_path):
    """The same kill with torchrun's defaults, and a restarted rank 1 that takes a while to start up."""
    run_dir = tmp_path / "run"
    updates = 20
    total = updates * 2 * FRAMES_PER_UPDATE
    cmd = _torchrun(
        str(TRAIN_WORKER),
        PRESET,
        *TINY,
        "distributed.sync_frac=1.0",
        f"total_frames={total}",
        "--run-dir",
        str(run_dir),
        "--restart-delay-rank=1",
        "--restart-delay-s=10",
        max_restarts=2,
    )
    first = _kill_one_worker(tmp_path, run_dir, cmd, victim=1, timeout=75)
    _assert_resumed_and_finished(run_dir, first, updates, total)


# --- 5. SIGTERM ------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_sigterm_checkpoints_and_resume_finishes(tmp_path):
    run_dir = tmp_path / "run"
    updates = 60
    total = updates * FRAMES_PER_UPDATE
    proc = _start(_cli(PRESET, *TINY, f"total_frames={total}", "--run-dir", str(run_dir)), tmp_path)
    try:
        _wait_for_checkpoint(run_dir, proc, timeout=90)
        proc.send_signal(signal.SIGTERM)
        out, _ = _finish(proc, 60)
    finally:
        _stop_group(proc)
    assert "stopped by SIGTERM" in out, out
    rows, events = _log(run_dir)
    state = _newest(run_dir)
    stopped_at = state["counters"]["update"]
    assert stopped_at < updates, "the run ended before the signal arrived"
    assert rows[-1]["train/update"] == stopped_at
    assert rows[-1]["frames"] == state["counters"]["frames"] == stopped_at * FRAMES_PER_UPDATE
    assert events[-1]["event"] == "checkpoint" and events[-1]["update"] == stopped_at

    out, _ = _run(_cli("--run-dir", str(run_dir), "--resume"), tmp_path)
    assert "done:" in out
    rows, events = _log(run_dir)
    resume = [e for e in events if e["event"] == "resume"]
    assert len(resume) == 1 and resume[0]["update"] == stopped_at
    assert [r["train/update"] for r in rows] == list(range(1, updates + 1))
    _assert_counters(_newest(run_dir), updates, total)
    navzoo.load(run_dir)


def test_train_in_a_process_that_goes_on_gives_back_its_signals_and_the_trainer(tmp_path):
    """After train() returns, SIGTERM is the caller's again, and nothing holds the trainer (its DDP model
    holds the process group, whose threads must not outlive it to interpreter shutdown)."""
    trainers = []

    class Remember(TrainerCallback):
        def on_train_start(self, trainer):
            trainers.append(weakref.ref(trainer))

    def caller_handler(signum, frame):
        pass

    previous = signal.signal(signal.SIGTERM, caller_handler)
    usr1 = signal.getsignal(signal.SIGUSR1)
    try:
        config = load_config(PRESET, [*TINY, f"total_frames={FRAMES_PER_UPDATE}"])
        train(config, tmp_path / "run", callbacks=[Remember()])
        assert signal.getsignal(signal.SIGTERM) is caller_handler
        assert signal.getsignal(signal.SIGUSR1) is usr1
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert len(trainers) == 1 and trainers[0]() is None


# --- 6. a folder with checkpoints needs --resume ---------------------------------------------------------
def test_existing_checkpoints_need_resume(tmp_path):
    run_dir = tmp_path / "run"
    args = [PRESET, *TINY, f"total_frames={FRAMES_PER_UPDATE}", "--run-dir", str(run_dir)]
    _in_process("train", *args)
    before = sorted(p.name for p in (run_dir / ckpt.CHECKPOINT_DIR).iterdir())
    log_before = (run_dir / "log.jsonl").read_text()
    _, err = _in_process("train", *args, expect_rc=2)
    assert "--resume" in err, err
    assert "Traceback" not in err, err
    # Nothing was touched.
    assert sorted(p.name for p in (run_dir / ckpt.CHECKPOINT_DIR).iterdir()) == before
    assert (run_dir / "log.jsonl").read_text() == log_before


# --- 7. what a killed or damaged run leaves behind ---------------------------------------------------------
def test_resume_skips_a_damaged_checkpoint_and_removes_stale_temporaries(tmp_path):
    run_dir = tmp_path / "run"
    args = [*TINY, f"total_frames={4 * FRAMES_PER_UPDATE}", "--run-dir", str(run_dir)]
    _in_process("train", PRESET, *args)
    folder = run_dir / ckpt.CHECKPOINT_DIR
    assert [p.name for p in ckpt.list_checkpoints(run_dir)] == ["ckpt-000000002.pt", "ckpt-000000004.pt"]
    newest = folder / "ckpt-000000004.pt"
    newest.write_bytes(newest.read_bytes()[:1000])  # damaged, as by a disk that filled up
    killed = subprocess.Popen([sys.executable, "-c", "pass"])
    killed.wait()  # a process that is gone: its temporary is stale, where a live one's is not
    stale = folder / f".ckpt-000000006.pt.tmp-{killed.pid}"  # as a kill -9 during a save leaves it
    stale.write_bytes(b"\0" * 1000)

    out, err = _in_process(
        "train", f"total_frames={6 * FRAMES_PER_UPDATE}", "--run-dir", str(run_dir), "--resume"
    )
    assert "skipped a damaged checkpoint" in out and "ckpt-000000004.pt" in out and "ckpt-000000002.pt" in out
    assert "Traceback" not in err
    assert not stale.exists()
    # Set aside, so that pruning by number never mistakes it for the newest checkpoint.
    assert (folder / "ckpt-000000004.pt.damaged").is_file()
    assert ckpt.load_latest(run_dir)[0].name == "ckpt-000000006.pt"
    resume = [e for e in _log(run_dir)[1] if e["event"] == "resume"]
    assert resume[-1]["update"] == 2
    _assert_counters(_newest(run_dir), 6, 6 * FRAMES_PER_UPDATE)


def test_resume_with_another_architecture_names_what_changed(tmp_path):
    run_dir = tmp_path / "run"
    _in_process("train", PRESET, *TINY, f"total_frames={2 * FRAMES_PER_UPDATE}", "--run-dir", str(run_dir))
    resume = (f"total_frames={4 * FRAMES_PER_UPDATE}", "policy.hidden_size=64", "--run-dir", str(run_dir))
    _, err = _in_process("train", *resume, "--resume", expect_rc=2)
    assert "another architecture" in err and "policy.hidden_size: 32 -> 64" in err, err
    assert "Traceback" not in err, err


# --- 8. nothing is overwritten silently -----------------------------------------------------------------
def test_a_folder_holding_a_model_is_not_overwritten_without_overwrite(tmp_path):
    model = tmp_path / "model"
    save_pretrained(navzoo.create_model("pointnav-blind", hidden_size=32), model)
    (model / "notes.txt").write_text("mine")
    weights = (model / "model.safetensors").read_bytes()
    args = [PRESET, *TINY, f"total_frames={FRAMES_PER_UPDATE}", "--run-dir", str(model)]
    _, err = _in_process("train", *args, expect_rc=2)
    assert "holds a model" in err and "--overwrite" in err and "Traceback" not in err, err
    assert (model / "model.safetensors").read_bytes() == weights
    assert sorted(p.name for p in model.iterdir()) == ["config.json", "model.safetensors", "notes.txt"]

    _in_process("train", *args, "--overwrite")
    assert (model / "model.safetensors").read_bytes() != weights and (
        model / "notes.txt"
    ).read_text() == "mine"


# --- 9. imitation, then DD-PPO from its weights (PIRLNav) ------------------------------------------------
def test_rl_from_an_imitation_run_warms_up_the_critic_and_records_the_recipe(tmp_path):
    imitation, rl = tmp_path / "imitation", tmp_path / "rl"
    one_update = [*TINY, *ADAM, f"total_frames={FRAMES_PER_UPDATE}"]
    _in_process("train", PRESET, *one_update, "algorithm=dagger", "--run-dir", str(imitation))
    warmup = [f"init_from={imitation}", "ppo.critic_warmup_updates=1"]
    _in_process("train", PRESET, *one_update, *warmup, "--run-dir", str(rl))

    before, after = load_file(imitation / "model.safetensors"), load_file(rl / "model.safetensors")
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    assert changed and all(k.startswith("critic.") for k in changed), changed  # the actor held still
    recipe = json.loads((rl / "config.json").read_text())["provenance"]
    assert recipe["frames"] == FRAMES_PER_UPDATE and recipe["train_config"]["algorithm"] == "ppo"
    start = recipe["initialised_from"]
    assert (start["source"], start["algorithm"], start["frames"]) == (
        str(imitation),
        "dagger",
        FRAMES_PER_UPDATE,
    )

    other = (PRESET, *one_update, "policy.hidden_size=64", *warmup, "--run-dir", str(tmp_path / "other"))
    _, err = _in_process("train", *other, expect_rc=2)
    assert (
        "invalid init_from" in err and "hidden_size: 32 there, 64 here" in err and "Traceback" not in err
    ), err


def test_a_dd_ppo_run_follows_a_curriculum_of_episode_lengths(tmp_path):
    """A run without a teacher may still have later stages that change its scene stream: short episodes
    first, then longer ones, each stage in a new simulator."""
    f = FRAMES_PER_UPDATE
    sims = []

    class Watch(TrainerCallback):
        def on_update_end(self, trainer, metrics):
            sims.append(trainer.sim)

    curriculum = f"stages=[{{from_frames: {2 * f}, sim: {{max_geodesic: 12.0}}}}]"
    config = load_config(PRESET, [*TINY, *ADAM, f"total_frames={3 * f}", "sim.max_geodesic=3.0", curriculum])
    train(config, tmp_path / "run", callbacks=[Watch()])
    assert [sim.config.max_geodesic for sim in sims] == [3.0, 3.0, 12.0]
    provenance = json.loads((tmp_path / "run" / "config.json").read_text())["provenance"]
    assert [s["algorithm"] for s in provenance["stages"]] == ["ppo", "ppo"]
