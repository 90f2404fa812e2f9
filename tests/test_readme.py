"""The README's examples run as written.

- Python blocks all parse; the ones that need no network and no placeholder run, in one fresh interpreter
  in the README's order (later blocks use names from earlier ones, as a reader's session would).
- Every `navzoo` command line of the shell blocks (also under torchrun) parses with navzoo's own
  command-line parser, so each command and option exists; train and finetune lines that start a run also
  resolve their whole config with --print-config (preset names, override keys and values).
"""

from __future__ import annotations

import ast
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from navzoo.cli import OVERRIDE, build_parser
from navzoo.cli import main as cli_main

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)
# Python lines left out of the run, and why: each needs the network or names something of the reader's.
NOT_RUN = {
    'navzoo.load("pointnav-se-resnext101")': "downloads habitat's release",
    "path/to/folder": "a folder of the reader's",
    "hf-hub:org/name": "a Hub repository of the reader's",
}


def blocks(language: str) -> list[str]:
    return [body for lang, body in BLOCK.findall(README.read_text()) if lang == language]


def runnable_python() -> str:
    lines = []
    for block in blocks("python"):
        lines += [line for line in block.splitlines() if not any(marker in line for marker in NOT_RUN)]
    return "\n".join(lines)


def navzoo_commands() -> list[list[str]]:
    """The argv after `navzoo` (or `-m navzoo.cli`) of every command line of the shell blocks."""
    commands = []
    for block in blocks("bash"):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if words[:1] == ["navzoo"]:
                commands.append(words[1:])
            elif "navzoo.cli" in words:
                commands.append(words[words.index("navzoo.cli") + 1 :])
    return commands


def test_the_readme_has_the_examples_this_file_checks():
    assert len(blocks("python")) >= 4 and len(navzoo_commands()) >= 20
    text = runnable_python()
    for marker in NOT_RUN:  # each exclusion still matches a line, or it is stale
        assert marker in "\n".join(blocks("python")) and marker not in text


@pytest.mark.parametrize("index", range(len(blocks("python"))))
def test_python_block_parses(index):
    ast.parse(blocks("python")[index])


def test_python_examples_run(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", runnable_python()],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "episode0.png").is_file()


@pytest.mark.parametrize("argv", navzoo_commands(), ids=lambda argv: " ".join(argv)[:60])
def test_command_line_parses(argv, capsys, tmp_path, monkeypatch):
    parser = build_parser(argv[0])
    parser.parse_args([a for a in argv if not OVERRIDE.match(a)])
    starts_a_run = argv[0] in ("train", "finetune") and "--resume" not in argv
    if starts_a_run:
        monkeypatch.chdir(tmp_path)
        assert cli_main([*argv, "--print-config"]) == 0, capsys.readouterr().err
