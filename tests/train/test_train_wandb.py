"""Weights & Biases logging of a training run, with the real wandb library in offline mode (no server is
reachable from the tests): the scalars arrive against frames, and a resumed run continues the same W&B run."""

import json
import struct
import time

import pytest

from navzoo.errors import ConfigError
from navzoo.train.config import load_config
from navzoo.train.logger import WANDB_ID_NAME
from navzoo.train.trainer import train

pytest.importorskip("wandb")

BLOCK, FULL, LAST = 32 * 1024, 1, 4

TINY = [
    "policy.hidden_size=16",
    "sim.num_envs=4",
    "ppo.num_steps=8",
    "ppo.num_mini_batch=1",
    "sim.scene_families=[apartment-s]",
    "torch_threads=1",
    "checkpoint_every=1",
    "wandb.project=navzoo-tests",
    "wandb.tags=[tiny]",
]


def _records(offline_run) -> list:
    """The protobuf records of an offline W&B run file: a 7-byte file header, then LevelDB-style log
    blocks of 32 KiB, each record with a 7-byte header (CRC, length, type: 1 whole, 2-4 first/middle/last
    piece) that never straddles a block."""
    from wandb.proto import wandb_internal_pb2

    (path,) = offline_run.glob("run-*.wandb")
    data, position, pieces, records = path.read_bytes(), 7, b"", []
    while position + 7 <= len(data):
        room = BLOCK - position % BLOCK
        if room < 7:  # a block's tail too short for a header is padding
            position += room
            continue
        length, kind = struct.unpack_from("<HB", data, position + 4)
        pieces += data[position + 7 : position + 7 + length]
        position += 7 + length
        if kind in (FULL, LAST):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pieces)
            records.append(record)
            pieces = b""
    return records


def _history(offline_run) -> list[dict]:
    """The rows the run logged, as {key: value}."""
    rows = []
    for record in _records(offline_run):
        if record.WhichOneof("record_type") == "history":
            # Keys with a slash arrive split into nested_key.
            items = record.history.item
            rows.append(
                {item.key or "/".join(item.nested_key): json.loads(item.value_json) for item in items}
            )
    return rows


def _config_keys(offline_run) -> set[str]:
    """The top-level keys of the config the run started with."""
    (run,) = (r.run for r in _records(offline_run) if r.WhichOneof("record_type") == "run")
    return {item.key for item in run.config.update}


def test_training_logs_to_wandb_and_a_resume_continues_the_same_run(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    run_dir = tmp_path / "run"
    config = load_config("pointnav-blind", [*TINY, "total_frames=64"])
    train(config, run_dir)
    run_id = (run_dir / WANDB_ID_NAME).read_text().strip()
    (first,) = (run_dir / "wandb").glob(f"offline-run-*-{run_id}")
    rows = _history(first)
    assert [row["frames"] for row in rows] == [32, 64]  # one row per update, against frames
    assert all(row["perf/fps"] > 0 and "loss/value" in row for row in rows)
    assert {"sim", "ppo", "total_frames", "wandb"} <= _config_keys(first)

    # wandb names an offline run's folder by the second it starts: a resume in the same second would
    # write into the first run's folder.
    time.sleep(1.05 - time.time() % 1)
    train(config.replace(total_frames=128), run_dir, resume=True)
    assert (run_dir / WANDB_ID_NAME).read_text().strip() == run_id
    runs = sorted((run_dir / "wandb").glob(f"offline-run-*-{run_id}"))
    assert len(runs) == 2 and [row["frames"] for row in _history(runs[-1])] == [96, 128]


def test_an_unknown_wandb_mode_is_refused():
    with pytest.raises(ConfigError, match=r"wandb\.mode"):
        load_config("pointnav-blind", ["wandb.mode=cloud"])
