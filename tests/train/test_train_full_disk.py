"""A run on a disk that fills up, on a real full disk (a small tmpfs, mounted as root; skipped otherwise):
the checkpoint, the exported model or the log line that does not fit fails with one line naming the file and
the full disk, leaves no temporary behind and the previous version intact, and the run resumes from the
previous checkpoint once there is space again."""

from __future__ import annotations

import errno
import json

import pytest

import navzoo
from navzoo.models.weights import save_pretrained
from navzoo.train import checkpoint as ckpt
from navzoo.train.logger import LOG_NAME, TrainLogger
from navzoo.train.model_export import export_model
from tests.storage.disks import fill, small_disk
from tests.train.test_train_distributed import FRAMES_PER_UPDATE, PRESET, TINY, _in_process, _log

DISK_BYTES = 4 * 1024 * 1024  # a tiny run's folder takes about 0.5 MB, a checkpoint about 180 kB


def _temporaries(folder) -> list[str]:
    return [p.name for p in folder.rglob("*") if ".tmp-" in p.name or p.name == ".export"]


def test_a_checkpoint_that_does_not_fit_leaves_the_previous_one_and_the_run_resumes_from_it(tmp_path):
    with small_disk(tmp_path / "disk", DISK_BYTES) as disk:
        run_dir = disk / "run"
        _in_process(
            "train", PRESET, *TINY, f"total_frames={2 * FRAMES_PER_UPDATE}", "--run-dir", str(run_dir)
        )
        previous = ckpt.latest_checkpoint(run_dir)
        filler = fill(disk, 64 * 1024)  # room for the log lines, not for another checkpoint

        more = (f"total_frames={6 * FRAMES_PER_UPDATE}", "--run-dir", str(run_dir), "--resume")
        _, err = _in_process("train", *more, expect_rc=2)
        errors = [line for line in err.splitlines() if "error" in line.lower()]  # past the progress bar
        assert len(errors) == 1 and "Traceback" not in err, err
        assert "the disk is full" in errors[0] and str(run_dir / ckpt.CHECKPOINT_DIR / "ckpt-") in errors[0]
        assert _temporaries(run_dir) == []
        assert ckpt.list_checkpoints(run_dir) == [previous]
        assert ckpt.load_checkpoint(previous)["counters"]["update"] == 2
        for line in (run_dir / LOG_NAME).read_text().splitlines():
            json.loads(line)

        filler.unlink()
        out, _ = _in_process("train", *more)
        assert "done: 6 updates" in out
        resumes = [e for e in _log(run_dir)[1] if e["event"] == "resume"]
        assert [e["update"] for e in resumes] == [2, 2]  # the failed attempt, then this one
        assert [r["train/update"] for r in _log(run_dir)[0]] == list(range(1, 7))


def test_a_model_that_does_not_fit_leaves_the_exported_one(tmp_path):
    model = navzoo.create_model(PRESET, hidden_size=32)
    with small_disk(tmp_path / "disk", 512 * 1024) as disk:
        run_dir = disk / "run"
        save_pretrained(model, run_dir)
        before = {p.name: p.read_bytes() for p in run_dir.iterdir()}
        fill(disk, 16 * 1024)  # a third of the weights
        with pytest.raises(OSError) as err:
            export_model(model, run_dir, provenance={})
        assert err.value.errno == errno.ENOSPC and err.value.filename == str(run_dir / "model.safetensors")
        assert _temporaries(run_dir) == []
        assert {p.name: p.read_bytes() for p in run_dir.iterdir()} == before
        navzoo.load(run_dir)


def test_a_log_line_that_does_not_fit_names_the_log_and_is_left_out(tmp_path):
    with small_disk(tmp_path / "disk", 512 * 1024) as disk:
        logger = TrainLogger(disk, total_frames=10, initial_frames=0, enabled=True, resumed=False)
        try:
            logger.event(event="start")
            fill(disk, 0)
            with pytest.raises(OSError) as err:
                logger.event(event="checkpoint", path="x" * 100_000)
        finally:
            logger.close()
        assert err.value.errno == errno.ENOSPC and err.value.filename == str(disk / LOG_NAME)
        assert (disk / LOG_NAME).read_text() == '{"event": "start"}\n'
