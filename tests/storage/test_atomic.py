"""navzoo.storage.atomic: a write that fails on a real full disk leaves no temporary and names the file;
only temporaries of processes that are gone count as stale."""

from __future__ import annotations

import errno
import os
import subprocess
import sys

import pytest
import torch
from safetensors.torch import save_file

from navzoo.storage.atomic import append_whole, removed_on_failure, stale_temporaries, temporary_path
from tests.storage.disks import fill, small_disk


def test_only_temporaries_of_processes_that_are_gone_are_stale(tmp_path):
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    try:
        live_file = tmp_path / f".ckpt-000000002.pt.tmp-{live.pid}"
        gone_file = tmp_path / f".ckpt-000000001.pt.tmp-{gone.pid}"
        for path in (live_file, gone_file):
            path.write_bytes(b"\0")
        assert stale_temporaries(tmp_path, ".ckpt-*.pt.tmp-*") == [gone_file]
    finally:
        live.kill()
        live.wait()


@pytest.mark.parametrize("writer", ["torch", "safetensors"])
def test_a_write_on_a_full_disk_names_the_file_and_leaves_no_temporary(tmp_path, writer):
    tensors = {"x": torch.zeros(100_000)}  # 400 kB
    with small_disk(tmp_path / "disk", 256 * 1024) as disk:
        path = disk / "file"
        tmp = temporary_path(path)
        with pytest.raises(OSError) as err, removed_on_failure(tmp, path):
            if writer == "torch":
                with open(tmp, "wb") as f:
                    torch.save(tensors, f)  # torch says "unexpected pos", with the OSError chained
            else:
                save_file(tensors, tmp)  # safetensors names "os error 28" in its message
        assert err.value.errno == errno.ENOSPC and err.value.filename == str(path)
        assert list(disk.iterdir()) == []


def test_a_line_that_does_not_fit_is_not_appended_at_all(tmp_path):
    with small_disk(tmp_path / "disk", 64 * 1024) as disk:
        path = disk / "log.jsonl"
        path.write_text('{"a": 1}\n')
        fill(disk, 0)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        try:
            with pytest.raises(OSError) as err:
                append_whole(fd, b"x" * 100_000 + b"\n", path)
        finally:
            os.close(fd)
        assert err.value.errno == errno.ENOSPC and err.value.filename == str(path)
        assert path.read_text() == '{"a": 1}\n'
