"""Released DD-PPO entries fetched from a release folder over real HTTP, converted and cached.

A loopback server (conftest.ReleaseServer, 127.0.0.1 only) plays habitat's release folder through
NAVZOO_DDPPO_BASE_URL. It serves checkpoints in the released layout, {"state_dict": {"actor_critic.<name>":
...}}, built with random weights from habitat-baselines' own reference modules (test_convert). Nothing of
navzoo is mocked; only the address of habitat's folder is replaced, since it cannot be reached from the tests.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import httpx
import pytest
import torch

import navzoo
from navzoo.cli.main import main
from navzoo.errors import UnsafeCheckpointError, WeightsFormatError, WeightsNotAvailableError
from navzoo.storage.http_download import _total_size
from navzoo.zoo.habitat_release import BASE_URL_ENV, RELEASE_FOLDER, cache_root, cached_release
from navzoo.zoo.registry import HABITAT_RELEASE, model_entry
from tests.models.test_models_habitat import as_habitat_reads, load_reference, reference_forward
from tests.storage.test_locks import HOLDER
from tests.zoo.test_convert import Payload, outputs, released_checkpoint

BLIND = "gibson-0plus-mp3d-train-val-test-blind.pth"
RESNET50 = "gibson-2plus-resnet50.pth"

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def ref():
    return load_reference()


def serve(server, filename: str, checkpoint: dict, legacy: bool = False) -> dict[str, torch.Tensor]:
    """Put `checkpoint` in the served folder as `filename`; its tensors without `actor_critic.`."""
    torch.save(checkpoint, server.root / filename, _use_new_zipfile_serialization=not legacy)
    return {k.removeprefix("actor_critic."): v for k, v in checkpoint["state_dict"].items()}


def assert_matches_reference(ref, policy, original: dict[str, torch.Tensor]) -> None:
    out, (obs, *rest) = outputs(policy)
    logits, value, hidden = reference_forward(ref, original, policy.config, as_habitat_reads(obs), *rest)
    torch.testing.assert_close(out.distribution.logits, torch.log_softmax(logits, -1), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out.value, value.squeeze(-1), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out.hidden, hidden, atol=1e-5, rtol=1e-5)


def assert_nothing_loadable(filename: str) -> None:
    """No converted folder, no downloaded .pth and no staging folder left in the release cache."""
    assert cached_release(filename) is None
    folder = cache_root() / RELEASE_FOLDER
    leftovers = [p.name for p in folder.iterdir() if not p.name.endswith((".lock", ".part"))]
    assert leftovers == []


def test_every_released_file_is_registered_with_its_source():
    released = [model_entry(n) for n in navzoo.list_models() if model_entry(n).release_file]
    assert all(e.weights_source == HABITAT_RELEASE for e in released)
    assert len(released) == 9  # every .pth of habitat's ddppo-models folder
    for entry in released:
        assert entry.provenance.original_url.endswith("/ddppo-models/" + entry.release_file)
        assert model_entry(entry.release_file) is entry  # habitat's file name works as a name too
        assert model_entry(entry.release_file.removesuffix(".pth")) is entry


def test_first_load_downloads_converts_and_caches(ref, release_server, capfd):
    original = serve(release_server, BLIND, released_checkpoint(ref, None))
    assert "pointnav-blind" not in navzoo.list_models(local=True)

    policy = navzoo.load("pointnav-blind")
    assert policy.name == "pointnav-blind" and policy.provenance["original_file"] == BLIND
    assert policy.provenance["fetched_from"] == release_server.url + BLIND  # the mirror, not habitat's
    assert_matches_reference(ref, policy, original)
    progress = capfd.readouterr().err
    assert BLIND in progress and "B/s" in progress  # tqdm's bar: bytes, rate and time left

    folder = cached_release(BLIND)
    assert folder == cache_root() / RELEASE_FOLDER / BLIND.removesuffix(".pth")
    assert sorted(p.name for p in folder.iterdir()) == ["config.json", "model.safetensors"]
    assert sorted(p.name for p in folder.parent.iterdir()) == [BLIND.removesuffix(".pth"), BLIND + ".lock"]
    assert "pointnav-blind" in navzoo.list_models(local=True)

    requests = len(release_server.requests)
    again = navzoo.create_model("pointnav-blind", pretrained=True)
    assert len(release_server.requests) == requests == 1  # later uses make no request
    assert torch.equal(outputs(again)[0].value, outputs(policy)[0].value)


def test_a_cached_release_loads_offline_with_the_server_stopped(ref, release_server, tmp_path):
    original = serve(release_server, BLIND, released_checkpoint(ref, None, seed=3))
    expected = outputs(navzoo.load("pointnav-blind"))[0]
    release_server.stop()
    script = textwrap.dedent(
        """
        import json, sys, torch, navzoo
        from tests.zoo.test_convert import outputs
        out = outputs(navzoo.load("pointnav-blind"))[0]
        print(json.dumps({"logits": out.distribution.logits.tolist(), "value": out.value.tolist()}))
        """
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf-home"), "PYTHONPATH": "tests"}
    env[BASE_URL_ENV] = release_server.url  # stopped: any request would fail
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    torch.testing.assert_close(torch.tensor(got["logits"]), expected.distribution.logits)
    torch.testing.assert_close(torch.tensor(got["value"]), expected.value)
    assert original  # the reference tensors were served


def test_pull_fetches_the_se_resnext101_ahead_of_time(ref, release_server, capsys):
    """The largest released architecture, in the legacy (pre-zip) format the 2020 files may use."""
    filename = "gibson-2plus-se-resneXt101-lstm1024.pth"
    original = serve(release_server, filename, released_checkpoint(ref, "se_resneXt101", hidden=1024), True)
    assert main(["pull", "pointnav-se-resnext101"]) == 0
    assert capsys.readouterr().out.strip() == str(cached_release(filename))
    policy = navzoo.load("pointnav-se-resnext101", local_files_only=True)
    assert policy.config == model_entry("pointnav-se-resnext101").config
    assert_matches_reference(ref, policy, original)


def test_a_cut_download_resumes_where_it_stopped(ref, release_server):
    original = serve(release_server, BLIND, released_checkpoint(ref, None))
    size = (release_server.root / BLIND).stat().st_size
    half = size // 2

    release_server.cut[BLIND] = half  # the connection drops half-way: the same call asks for the rest
    assert_matches_reference(ref, navzoo.load("pointnav-blind"), original)
    assert release_server.requests == [(BLIND, None), (BLIND, f"bytes={half}-")]


@pytest.mark.parametrize(
    ("headers", "offset", "total"),
    [
        ([(b"Content-Length", b"10")], 0, 10),
        ([(b"Content-Range", b"bytes 5-9/10"), (b"Content-Length", b"5")], 5, 10),
        # A server's header bytes read as Latin-1: a superscript is a digit to str.isdigit, not to int().
        ([(b"Content-Length", "\u00b9".encode("latin-1"))], 0, None),
        ([(b"Content-Range", "bytes 5-9/\u00b9".encode("latin-1")), (b"Content-Length", b"5")], 5, 10),
    ],
)
def test_the_download_size_comes_from_decimal_headers_only(headers, offset, total):
    assert _total_size(httpx.Response(200, headers=headers), offset) == total


def test_an_interrupted_download_resumes_on_the_next_call(ref, release_server):
    original = serve(release_server, BLIND, released_checkpoint(ref, None))
    third = (release_server.root / BLIND).stat().st_size // 3
    release_server.cut[BLIND] = third
    release_server.fail[BLIND] = 503  # the retry after the cut fails too: the call gives up
    with pytest.raises(WeightsNotAvailableError, match=rf"HTTP 503.*{BASE_URL_ENV}") as err:
        navzoo.load("pointnav-blind")
    assert "pointnav-blind" not in navzoo.list_models(local=True)
    part = cache_root() / RELEASE_FOLDER / (BLIND + ".part")
    assert part.stat().st_size == third, str(err.value)

    del release_server.fail[BLIND]
    release_server.requests.clear()
    assert_matches_reference(ref, navzoo.load("pointnav-blind"), original)
    assert release_server.requests == [(BLIND, f"bytes={third}-")]
    assert not part.exists()


def assert_fetch_error(err: pytest.ExceptionInfo, server, filename: str, name: str) -> None:
    """The message names the file, the URL tried, the mirror variable and the manual route."""
    message = str(err.value)
    assert filename in message and server.url + filename in message and BASE_URL_ENV in message
    assert f"navzoo convert {filename} {name}/" in message


def test_a_missing_file_is_an_error_within_seconds(release_server):
    start = time.monotonic()
    with pytest.raises(WeightsNotAvailableError, match="HTTP 404") as err:
        navzoo.load("pointnav-resnet50")
    assert time.monotonic() - start < 5
    assert_fetch_error(err, release_server, RESNET50, "pointnav-resnet50")
    assert_nothing_loadable(RESNET50)


def test_no_network_is_an_error_within_seconds(release_server, monkeypatch):
    release_server.stop()  # nothing listens on its port any more
    start = time.monotonic()
    with pytest.raises(WeightsNotAvailableError, match="download failed") as err:
        navzoo.load("pointnav-blind")
    assert time.monotonic() - start < 5
    assert_fetch_error(err, release_server, BLIND, "pointnav-blind")


def test_offline_mode_makes_no_request(release_server, ref):
    serve(release_server, BLIND, released_checkpoint(ref, None))
    with pytest.raises(WeightsNotAvailableError, match=r"offline mode is on.*navzoo pull pointnav-blind"):
        navzoo.load("pointnav-blind", local_files_only=True)
    assert release_server.requests == []


def test_a_truncated_file_is_removed_and_downloaded_again(ref, release_server):
    original = serve(release_server, BLIND, released_checkpoint(ref, None))
    whole = (release_server.root / BLIND).read_bytes()
    (release_server.root / BLIND).write_bytes(whole[: len(whole) // 2])  # served complete, but truncated
    with pytest.raises(WeightsFormatError, match="truncated") as err:
        navzoo.load("pointnav-blind")
    assert_fetch_error(err, release_server, BLIND, "pointnav-blind")
    assert_nothing_loadable(BLIND)

    (release_server.root / BLIND).write_bytes(whole)
    assert_matches_reference(ref, navzoo.load("pointnav-blind"), original)


def test_tensors_of_another_architecture_are_refused(ref, release_server):
    serve(release_server, RESNET50, released_checkpoint(ref, "resnet18"))
    with pytest.raises(WeightsFormatError, match=r"does not match the architecture 'resnet50'") as err:
        navzoo.load("pointnav-resnet50")
    assert_fetch_error(err, release_server, RESNET50, "pointnav-resnet50")
    assert_nothing_loadable(RESNET50)


def test_pickled_code_is_refused_and_never_run(ref, release_server, tmp_path):
    checkpoint = released_checkpoint(ref, None)
    marker = tmp_path / "code-ran"
    checkpoint["config"] = Payload(marker)
    serve(release_server, BLIND, checkpoint)
    with pytest.raises(UnsafeCheckpointError, match=r"refused.*never") as err:
        navzoo.load("pointnav-blind")
    assert_fetch_error(err, release_server, BLIND, "pointnav-blind")
    assert not marker.exists()
    assert_nothing_loadable(BLIND)


def test_a_mirror_on_the_file_system(ref, release_server, monkeypatch):
    """NAVZOO_DDPPO_BASE_URL may name a local folder (or file:// URL): the file is read where it is."""
    original = serve(release_server, BLIND, released_checkpoint(ref, None))
    monkeypatch.setenv(BASE_URL_ENV, release_server.root.as_uri())
    policy = navzoo.load("pointnav-blind")
    assert_matches_reference(ref, policy, original)
    assert policy.provenance["fetched_from"] == release_server.root.as_uri() + "/" + BLIND
    assert release_server.requests == [] and (release_server.root / BLIND).is_file()


def test_a_process_fetching_a_release_makes_others_wait_until_it_is_gone(ref, release_server):
    """The cache takes navzoo's OS lock (navzoo.storage.locks): a process holding it, here one killed with
    SIGKILL mid-fetch, holds the others back only while it lives."""
    serve(release_server, BLIND, released_checkpoint(ref, None))
    releases = cache_root() / RELEASE_FOLDER
    releases.mkdir(parents=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(releases / f"{BLIND}.lock")], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        loading = threading.Thread(target=navzoo.load, args=("pointnav-blind",))
        loading.start()
        loading.join(1.0)
        assert loading.is_alive() and release_server.requests == []
        os.kill(holder.pid, signal.SIGKILL)
        loading.join(60)
        assert not loading.is_alive() and cached_release(BLIND) is not None
    finally:
        holder.kill()
        holder.wait()


def test_a_habitat_agent_runs_zero_shot_in_the_embedded_simulator(ref, release_server, tmp_path, capsys):
    """`navzoo eval <released name>`: 256x256 depth, as habitat's agents were trained."""
    serve(release_server, RESNET50, released_checkpoint(ref, "resnet50"))
    out = tmp_path / "eval"
    argv = ["eval", "pointnav-resnet50", "--episodes", "2", "--num-envs", "2", "--replays", "0"]
    assert main([*argv, "--out", str(out)]) == 0
    report = json.loads((out / "eval.json").read_text())
    (agent,) = report["agents"].values()
    assert agent["model"]["name"] == "pointnav-resnet50" and len(agent["episodes"]) == 2
    assert agent["sim"]["resolution"] == [256, 256] and agent["sim"]["sensors"] == ["depth"]
    assert "pointnav-resnet50" in capsys.readouterr().out
