"""Every code block of the documentation pages runs, or says why not.

A page's blocks run in order in a fresh folder, Python blocks in one namespace per page and shell blocks in
bash, so a page can export scenes in one block and read them in the next. A block that cannot run here
(network, GPU, long training) follows a marker that gives the reason:

    <!-- docs-test: skip downloads habitat's release (network) -->

yaml and json blocks are parsed; a block in any other language, or without one, fails the test.
"""

import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.docs.conftest import DOCS

PYTHON = ("python", "py")
SHELL = ("bash", "sh", "shell")
DATA = {"yaml": yaml.safe_load, "json": json.loads, "text": str}
MARKER = re.compile(r"^<!--\s*docs-test:\s*(\S+)(.*?)-->\s*$")
FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w+-]*)")
SHELL_TIMEOUT_S = 120


@dataclass
class Block:
    page: str
    line: int  # of the opening fence, 1-based
    language: str
    code: str
    skip: str | None  # the reason, for a block that does not run


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of a page, with the reason of a skip marker on the line just before one."""
    lines = path.read_text().splitlines()
    found, marker, i = [], None, 0
    page = str(path.relative_to(DOCS))
    while i < len(lines):
        line = lines[i]
        match = MARKER.match(line.strip())
        if match:
            kind, reason = match.group(1), match.group(2).strip()
            assert kind == "skip", f"{page}:{i + 1}: unknown docs-test marker {kind!r} (only 'skip REASON')"
            assert len(reason.split()) >= 2, f"{page}:{i + 1}: a skip marker needs its reason"
            marker = (i, reason)
            i += 1
            continue
        fence = FENCE.match(line)
        if fence:
            indent, ticks, language = fence.groups()
            end = next(
                j
                for j in range(i + 1, len(lines))
                if lines[j].strip().startswith(ticks) and not lines[j].strip()[len(ticks) :]
            )
            code = "\n".join(text[len(indent) :] for text in lines[i + 1 : end])
            reason = marker[1] if marker and marker[0] == i - 1 else None
            found.append(Block(page, i + 1, language, code, reason))
            marker, i = None, end + 1
            continue
        if marker and line.strip():
            raise AssertionError(f"{page}:{marker[0] + 1}: a skip marker must sit just above a code block")
        i += 1
    return found


PAGES = sorted(p for p in DOCS.rglob("*.md") if "gen" not in p.relative_to(DOCS).parts)


@pytest.fixture
def docs_env(tmp_path, monkeypatch):
    """A fresh folder to run in, a private Hugging Face cache, no network, one thread."""
    monkeypatch.chdir(tmp_path)
    for name, value in {
        "HF_HOME": str(tmp_path / "hf-home"),
        "HF_HUB_OFFLINE": "1",
        "OMP_NUM_THREADS": "1",
        "MPLBACKEND": "Agg",
        "NO_MKDOCS_2_WARNING": "1",
    }.items():
        monkeypatch.setenv(name, value)
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield tmp_path
    torch.set_num_threads(threads)


@pytest.mark.parametrize("path", PAGES, ids=lambda p: str(p.relative_to(DOCS)))
def test_page_code_blocks_run(path, docs_env):
    namespace: dict = {"__name__": "__docs__"}
    for block in blocks(path):
        where = f"{block.page}:{block.line} ({block.language or 'no language'})"
        known = (*PYTHON, *SHELL, *DATA)
        assert block.language in known, f"{where}: give the block one of the languages {', '.join(known)}"
        if block.skip is not None:
            assert block.language in (*PYTHON, *SHELL), f"{where}: only code blocks are skipped"
            continue
        if block.language in DATA:
            DATA[block.language](block.code)
        elif block.language in PYTHON:
            try:
                exec(compile(block.code, where, "exec"), namespace)
            except Exception as exc:
                raise AssertionError(f"{where} failed: {exc!r}\n{block.code}") from exc
        else:
            done = subprocess.run(
                ["bash", "-e", "-c", block.code],
                capture_output=True,
                text=True,
                timeout=SHELL_TIMEOUT_S,
                env=os.environ.copy(),
            )
            assert done.returncode == 0, (
                f"{where} exited {done.returncode}:\n{block.code}\n{done.stdout}\n{done.stderr}"
            )


def test_markers_need_a_reason_and_a_block(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("<!-- docs-test: skip -->\n```bash\necho\n```\n")
    with pytest.raises(AssertionError, match="needs its reason"):
        blocks_at(page)
    page.write_text("<!-- docs-test: skip needs a GPU -->\n\ntext\n```bash\necho\n```\n")
    with pytest.raises(AssertionError, match="just above a code block"):
        blocks_at(page)
    page.write_text("<!-- docs-test: skip needs a GPU -->\n```bash\necho\n```\n```python\nx = 1\n```\n")
    first, second = blocks_at(page)
    assert first.skip == "needs a GPU" and second.skip is None and second.code == "x = 1"


def blocks_at(page: Path) -> list[Block]:
    """`blocks` of a page outside docs/."""
    global DOCS
    saved, DOCS = DOCS, page.parent
    try:
        return blocks(page)
    finally:
        DOCS = saved
