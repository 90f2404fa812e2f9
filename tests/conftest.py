"""Shared fixtures: a small room, one torch thread, scenes exported as scanned meshes, a loopback release
server, huggingface_hub offline or talking to a fake Hub (tests/hub/fake_hub.py). Plain helpers are in
tests/support.py."""

import itertools
import os

import huggingface_hub
import pytest
import torch
from huggingface_hub import constants

from tests.hub.fake_hub import FakeHub
from tests.support import MeshExport, ReleaseServer, box_room, export_val_meshes, hub_transport

if os.environ.get("PYTEST_XDIST_WORKER"):
    # Two test workers share a 2-core machine: one thread each (and in the processes they start), since
    # two threads per worker would only add OpenMP contention.
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    torch.set_num_threads(1)


def pytest_collection_modifyitems(config, items):
    """Deal the slow tests to the heads of the test workers' queues.

    pytest-xdist's worksteal scheduler gives each worker a contiguous share of the collection, run in
    order, and a worker that runs dry steals the tail of another's queue. In file order the learning tests
    come last, so they ran one after the other on one worker while the other had nothing left to do. Dealt
    round-robin to the starts of the shares, the slow tests run side by side and the short ones even out
    the end. Other schedulers still see the slow tests early."""
    workers = getattr(config, "workerinput", {}).get("workercount", 1)
    if workers < 2:
        return
    slow = [item for item in items if item.get_closest_marker("slow")]
    fast = iter([item for item in items if not item.get_closest_marker("slow")])
    ordered = []
    for worker in range(workers):
        share = (len(items) - len(ordered)) // (workers - worker)  # worksteal's first split
        dealt = slow[worker::workers]
        ordered += dealt + list(itertools.islice(fast, max(share - len(dealt), 0)))
    items[:] = ordered + list(fast)


@pytest.fixture
def room():
    return box_room()


def _single_thread():
    """Small tensors run fastest on one thread, which also avoids OpenMP spin-waits on busy CPUs."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


one_thread = pytest.fixture(_single_thread, name="one_thread")
# For modules whose module-scoped fixtures (a served demo, saved models) run torch as well.
one_thread_module = pytest.fixture(_single_thread, scope="module", name="one_thread_module")


@pytest.fixture(scope="session")
def val_meshes(tmp_path_factory) -> MeshExport:
    """An apartment-s val scene and four of its episodes, exported as habitat's data folder (once)."""
    return export_val_meshes(tmp_path_factory.mktemp("val-meshes"), episodes=4)


@pytest.fixture
def navmesh_cache(tmp_path_factory, monkeypatch):
    """Built navmeshes cached in this session's temporary folder (NAVZOO_NAVMESH_CACHE), not the user's."""
    folder = tmp_path_factory.getbasetemp() / "navmeshes"
    monkeypatch.setenv("NAVZOO_NAVMESH_CACHE", str(folder))
    return folder


@pytest.fixture
def release_server(tmp_path, monkeypatch):
    """A ReleaseServer over tmp_path/served, NAVZOO_DDPPO_BASE_URL pointed at it, and a fresh HF_HOME (so
    navzoo's release cache, HF_HOME/navzoo, starts empty) with offline mode off."""

    served = tmp_path / "served"
    served.mkdir()
    server = ReleaseServer(served)
    monkeypatch.setenv("NAVZOO_DDPPO_BASE_URL", server.url)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    yield server
    server.stop()


@pytest.fixture
def hub_offline(monkeypatch):
    """huggingface_hub in offline mode, as HF_HUB_OFFLINE=1 in the shell makes it: the variable is read once
    at import, so the setting is patched too. A request for a file not in the cache then fails at once,
    instead of waiting on a network this machine does not have."""

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


@pytest.fixture
def fake_hub(monkeypatch, tmp_path):
    """huggingface_hub talking to a FakeHub instead of the network, with a cache of its own: every commit
    of the fake has the same hash, so a snapshot another run left in a shared cache would be served as
    this test's."""
    hub = FakeHub()
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", True)
    cache = str(tmp_path / "fake-hub-cache")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", cache)  # read when a download is made
    monkeypatch.setenv("HF_HUB_CACHE", cache)  # and by any subprocess
    with hub_transport(hub):
        yield hub
