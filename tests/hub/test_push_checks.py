"""`navzoo push` checks what it is given before it works, and never writes over what it should not: its --out
folder (only with --overwrite, never over what it reads), an invalid repository id or a damaged evaluation
refused before anything is evaluated or written, and a Hub that never answers given up on after --timeout.
check_destination's rules hold for its other callers (train, convert) too."""

from __future__ import annotations

import json
import re
import shutil
import socket
import threading
import time
from pathlib import Path

import huggingface_hub.constants
import pytest

import navzoo
import navzoo.hub.push
from navzoo.cli.main import main as cli_main
from navzoo.errors import ConfigError
from navzoo.hub.push import HubError, upload
from navzoo.models.weights import CONFIG_NAME, WEIGHTS_NAME, save_pretrained
from navzoo.storage.destination import check_destination
from navzoo.train.run_folder import check_new_run
from tests.hub.fake_hub import TOKEN

REPO = "someone/blind-navigator"


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    policy = navzoo.create_model("pointnav-blind", hidden_size=16, num_recurrent_layers=1, rnn_type="GRU")
    return save_pretrained(policy, tmp_path_factory.mktemp("push-checks") / "model", name="tiny-blind")


@pytest.fixture(scope="module")
def eval_dir(model, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("push-checks-eval") / "eval"
    argv = ["eval", str(model), "--episodes", "2", "--replays", "1", "--out", str(out), "--device", "cpu"]
    assert cli_main(argv) == 0
    return out


def push(*argv: object) -> int:
    return cli_main(["push", *(str(a) for a in argv), "--device", "cpu"])


@pytest.fixture
def never_evaluates(monkeypatch):
    monkeypatch.setattr(navzoo.hub.push, "run", lambda *a, **k: pytest.fail("push evaluated the model"))


def test_an_existing_out_is_written_only_with_overwrite(model, eval_dir, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    for name in ("README.md", "eval.json", "notes.txt"):
        (out / name).write_text("mine")
    assert push(model, REPO, "--eval-dir", eval_dir, "--out", out, "--dry-run") == 2
    assert "holds files" in capsys.readouterr().err
    assert {p.name: p.read_text() for p in out.iterdir()} == dict.fromkeys(
        ("README.md", "eval.json", "notes.txt"), "mine"
    )
    assert push(model, REPO, "--eval-dir", eval_dir, "--out", out, "--dry-run", "--overwrite") == 0
    assert (out / "README.md").read_text() != "mine" and (out / "notes.txt").read_text() == "mine"
    assert json.loads((out / "eval.json").read_text())["summary"]["episodes"] == 2


def test_out_never_overlaps_what_push_reads(model, eval_dir, tmp_path, capsys):
    before = {p.name: p.read_bytes() for p in model.iterdir()}
    a_file = tmp_path / "a-file"
    a_file.write_text("mine")
    for out, message in (
        (model, f"it is {model}"),
        (model / "repo", f"it lies inside {model}"),
        (model.parent, f"it holds {model}"),
        (eval_dir, f"it is {eval_dir}"),
        (a_file, "it is a file"),
    ):
        argv = ["--eval-dir", eval_dir, "--out", out, "--dry-run", "--overwrite"]
        assert push(model, REPO, *argv) == 2, out
        assert message in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in model.iterdir()} == before
    assert not (model / "repo").exists() and a_file.read_text() == "mine"


def test_check_destination_guards_every_caller(model, tmp_path):
    a_file = tmp_path / "a-file"
    a_file.write_text("mine")
    with pytest.raises(ConfigError, match="a folder, and it is a file"):
        check_new_run(a_file, overwrite=True)  # navzoo train and finetune
    with pytest.raises(ConfigError, match=re.escape(f"it is {model}")):
        check_destination(model, overwrite=True, sources=[model])
    checkpoint, folder = tmp_path / "blind.pth", tmp_path / "folder"
    assert cli_main(["convert", str(model), str(checkpoint)]) == 0
    folder.mkdir()
    for argv, message in (
        ([model, folder], "a file, and it is a folder"),  # to habitat: DST is a file
        ([checkpoint, a_file], "a folder, and it is a file"),  # to navzoo: DST is a folder
        ([model, model], f"it is {model}"),
        ([checkpoint, tmp_path], f"it holds {checkpoint}"),
    ):
        with pytest.raises(ConfigError, match=re.escape(message)):
            cli_main(["--debug", "convert", *(str(a) for a in argv), "--overwrite"])
    assert {p.name for p in model.iterdir()} == {CONFIG_NAME, WEIGHTS_NAME}


@pytest.mark.usefixtures("never_evaluates")
def test_bad_repo_id_or_model_is_refused_before_evaluating(model, tmp_path, capsys, fake_hub):
    out = tmp_path / "out"
    for repo_id in ("someone/bad..name", "a/b/c", "someone/name.git", "x" * 97):
        start = time.perf_counter()
        assert push(model, repo_id, "--out", out, "--dry-run") == 2
        assert time.perf_counter() - start < 5
        assert "is not a valid Hub repository id" in capsys.readouterr().err
    assert push(tmp_path / "no-model", REPO, "--out", out, "--dry-run") == 2
    assert "no-model" in capsys.readouterr().err
    assert not out.exists()
    with pytest.raises(HubError, match="not a valid Hub repository id"):
        upload(model, "a/b/c", token=TOKEN)
    assert not fake_hub.repos and not fake_hub.commits


def _entry_without(field: str):
    def edit(report: dict) -> None:
        for entry in report["agents"].values():
            del entry[field]

    return edit


def _replay_named(name: str):
    def edit(report: dict) -> None:
        for entry in report["agents"].values():
            entry["replays"] = [name]

    return edit


def _metric(value):
    def edit(report: dict) -> None:
        for entry in report["agents"].values():
            entry["summary"]["spl"] = value

    return edit


@pytest.mark.usefixtures("never_evaluates")
@pytest.mark.parametrize(
    "damage,message",
    [
        (b"{not json", "is not a `navzoo eval` report: it is not JSON"),
        (b"[1, 2]", "it holds a list, not a report"),
        (b"\xff\xfe", "it is not JSON"),
        (b"[" * 100_000, "nested too deeply"),
        (b" " * ((8 << 20) + 1), "more than the 8 MiB"),
        (_entry_without("summary"), "the model's summary is missing"),
        (_entry_without("replays"), "the model's replays is missing"),
        (_replay_named("../../../etc/passwd"), "outside its folder"),
        (_replay_named(""), "outside its folder"),
        (_metric("high"), "no number 'spl'"),
        (_metric(float("nan")), "no number 'spl'"),
    ],
)
def test_a_damaged_evaluation_is_refused_and_nothing_is_written(
    model, eval_dir, tmp_path, capsys, damage, message
):
    damaged = tmp_path / "eval"
    shutil.copytree(eval_dir, damaged)
    report = damaged / "eval.json"
    if callable(damage):
        data = json.loads(report.read_text())
        damage(data)
        report.write_text(json.dumps(data))
    else:
        report.write_bytes(damage)
    out = tmp_path / "out"
    assert push(model, REPO, "--eval-dir", damaged, "--out", out, "--dry-run") == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not out.exists()


class SilentServer:
    """A TCP server on 127.0.0.1 that accepts every connection and never answers."""

    def __init__(self):
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.socket.getsockname()[1]}"
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:  # closed
                return
            self.held.append(connection)

    def close(self) -> None:
        self.socket.close()
        for connection in self.held:
            connection.close()


def test_a_hub_that_never_answers_is_given_up_on(model, eval_dir, tmp_path, capsys, monkeypatch):
    server = SilentServer()
    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", server.url)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    try:
        start = time.perf_counter()
        code = push(model, REPO, "--eval-dir", eval_dir, "--token", TOKEN, "--timeout", "1")
        seconds = time.perf_counter() - start
    finally:
        server.close()
    err = capsys.readouterr().err
    assert code == 2 and f"the Hub at {server.url} did not answer within 1 s" in err and "--timeout" in err
    assert seconds < 30, f"push gave up after {seconds:.0f} s"
    assert server.held, "push never reached the server"
    assert huggingface_hub.get_session().timeout.read is None  # the library's own default again
    with pytest.raises(SystemExit):
        cli_main(["push", str(model), REPO, "--timeout", "0"])
    assert "not a positive number of seconds" in capsys.readouterr().err


def test_push_help_documents_timeout_and_overwrite(capsys):
    with pytest.raises(SystemExit):
        cli_main(["push", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "--timeout SECONDS" in help_text and "default 60" in help_text and "--overwrite" in help_text
