"""Bounded reads: a file is read whole only up to its limit, gzip decompressed as a stream."""

import gzip
import resource

import pytest

from navzoo.errors import NavzooError, ReplayError
from navzoo.storage.bounded import read_bounded

LIMIT = 1000


@pytest.mark.parametrize("name", ["plain.json", "packed.json.gz"])
def test_a_file_at_the_limit_is_read_one_past_it_is_refused(tmp_path, name):
    path = tmp_path / name
    for size in (LIMIT, LIMIT + 1):
        data = b"x" * size
        path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
        if size == LIMIT:
            assert read_bounded(path, LIMIT, f"file {path}") == data
        else:
            grows = "decompresses to" if name.endswith(".gz") else "holds"
            with pytest.raises(NavzooError, match=rf"file .*{name} {grows} more than 1,000 bytes, the most"):
                read_bounded(path, LIMIT, f"file {path}")


def test_the_caller_chooses_the_error_and_whether_it_is_gzip(tmp_path):
    path = tmp_path / "replay.bin"  # gzip whatever its name
    path.write_bytes(gzip.compress(b"y" * (LIMIT + 1)))
    with pytest.raises(
        ReplayError, match=r"decompresses to more than 1,000 bytes, the most read here \(why\)"
    ):
        read_bounded(path, LIMIT, "replay", "(why)", gzipped=True, error=ReplayError)


def test_a_gzip_bomb_is_not_inflated(tmp_path):
    path = tmp_path / "bomb.gz"
    with gzip.GzipFile(path, "wb") as file:
        for _ in range(256):  # 256 MiB of zeros in a quarter of a megabyte
            file.write(bytes(1 << 20))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(NavzooError, match="more than 1 MiB"):
        read_bounded(path, 1 << 20, "bomb")
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 64 << 10  # KiB: under 64 MiB
