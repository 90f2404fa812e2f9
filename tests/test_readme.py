"""The README is a front page, and its examples run as written.

- It stays a front page (at most 250 lines; the experiment logs live on the docs site's results pages), keeps
  the two set-up commands as written, and every relative link and picture in it points at a file that exists.

- Python blocks all parse; the ones that need no network and no placeholder run, in one fresh interpreter
  in the README's order (later blocks use names from earlier ones, as a reader's session would).
- Every line of the shell blocks either runs for real here (the cheap ones, in a scratch folder) or is left
  out with its reason (SHELL_NOT_RUN), so a new line has to be classified.
- Every `navzoo` command line (also under torchrun) parses with navzoo's own command-line parser, so each
  command and option exists, in its current spelling; train and finetune lines that start a run also
  resolve their whole config with --print-config (preset names, override keys and values).
- The zoo table's numbers measured by navzoo (the shipped agents' val SPL, val success and test SPL, marked ³)
  are those of benchmarks/results/zoo/zoo_eval.json, which `python benchmarks/zoo_eval.py` writes, rounded as
  shown, and the round-trip table's those of benchmarks/results/mesh_round_trip.json (`python
  benchmarks/mesh_round_trip.py`), so the README cannot drift from the result files.
"""

from __future__ import annotations

import ast
import json
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from navzoo.cli.main import COMMANDS, OVERRIDE, build_parser
from navzoo.cli.main import main as cli_main
from navzoo.zoo.loader import locate

README = Path(__file__).resolve().parents[1] / "README.md"
ZOO_EVAL = README.parent / "benchmarks" / "results" / "zoo" / "zoo_eval.json"
ROUND_TRIP = README.parent / "benchmarks" / "results" / "mesh_round_trip.json"
ZOO_COLUMNS = {"Val SPL": ("val", "spl"), "Val success": ("val", "success"), "Test SPL": ("test", "spl")}
# A fenced block, also one indented under a list item (its closing fence indented the same).
BLOCK = re.compile(r"^( *)```(\w+)\n(.*?)^\1```", re.S | re.M)
# Python lines left out of the run, and why: each needs the network or names something of the reader's.
NOT_RUN = {
    'navzoo.load("pointnav-se-resnext101")': "downloads habitat's release",
    "path/to/folder": "a folder of the reader's",
    "hf-hub:org/name": "a Hub repository of the reader's",
}
# Shell lines run for real (matched by how they start): the arguments appended only make them cheaper, and
# the file each must write.
SHELL_RUN = {
    "navzoo --version": ([], None),
    "navzoo train pointnav-blind --frames 2e6": ([], None),  # --print-config: resolves, does not train
    "navzoo export-scenes exported-small": (
        [],
        "exported-small/scene_datasets/navzoo/navzoo.scene_dataset_config.json",
    ),
    "navzoo push runs/depth someone/pointnav-depth --out hub/depth --dry-run": (
        ["--episodes", "2"],
        "hub/depth/README.md",
    ),
    "navzoo convert navzoo-pointnav-blind blind.pth": ([], "blind.pth"),
}
# The other shell lines, and why they do not run here (matched by how they start).
SHELL_NOT_RUN = {
    "make ": "installs navzoo and runs its main job or the whole test suite",
    "navzoo pull": "downloads from habitat's release or the Hub",
    "navzoo push": "uploads to the Hub with the reader's token (the --dry-run line runs)",
    "navzoo train": "trains for minutes to hours (its config is resolved by test_command_line_parses)",
    "navzoo finetune": "trains for minutes to hours (its config is resolved by test_command_line_parses)",
    "torchrun": "starts several training workers for hours",
    "navzoo demo": "serves the web app until stopped",
    "navzoo eval": "evaluates 96 episodes per agent (the main job's size, minutes)",
}
# The README's contract: the two commands that set up a fresh clone and run the main job or the tests.
SETUP_LINES = (
    "make run    # installs navzoo and runs the main job: the shipped depth agent and the baselines "
    "on 96 val episodes",
    "make test   # installs the test dependencies and runs the whole test suite (ruff, type check, pytest)",
)
MAX_LINES = 250
# A Markdown link or picture with a relative target: [text](target) or ![alt](target).
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def blocks(language: str) -> list[str]:
    found = BLOCK.findall(README.read_text())
    return [textwrap.dedent(body) for _, lang, body in found if lang == language]


def runnable_python() -> str:
    lines = []
    for block in blocks("python"):
        lines += [line for line in block.splitlines() if not any(marker in line for marker in NOT_RUN)]
    return "\n".join(lines)


def shell_lines() -> list[str]:
    """Every command of the shell blocks, continuation lines joined, comments dropped."""
    lines = []
    for block in blocks("bash"):
        pending = ""
        for line in block.replace("\\\n", " ").splitlines():
            pending = f"{pending} {line}" if pending else line
            try:
                words = shlex.split(pending, comments=True)
            except ValueError:  # a quoted argument (a YAML list) goes on over the next line
                continue
            pending = ""
            if words:
                lines.append(shlex.join(words))
        assert not pending, f"a README shell block ends inside a quote: {pending}"
    return lines


def _prefixed(line: str, table: dict) -> str | None:
    """The longest key of `table` that `line` starts with."""
    return max((key for key in table if line.startswith(key)), key=len, default=None)


def navzoo_commands() -> list[list[str]]:
    """The argv after `navzoo` (or `-m navzoo`) of every navzoo subcommand line of the shell blocks."""
    commands = []
    for line in shell_lines():
        words = shlex.split(line)
        if words[:1] == ["navzoo"]:
            commands.append(words[1:])
        elif "navzoo.cli.main" in words:
            commands.append(words[words.index("navzoo.cli.main") + 1 :])
    return [argv for argv in commands if argv[0] in COMMANDS]


def test_the_readme_is_a_front_page_with_the_set_up_commands_and_working_links():
    text = README.read_text()
    assert len(text.splitlines()) <= MAX_LINES, "move the detail to a docs page and link it"
    assert SETUP_LINES[0] + "\n" + SETUP_LINES[1] in blocks("bash")[0]
    targets = [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t) and not t.startswith("#")]
    assert any(t.endswith(".png") for t in targets), "the front page shows a picture"
    assert any(t.startswith("docs/") and t.endswith(".md") for t in targets), "it links into the docs"
    for target in targets:
        assert (README.parent / target.partition("#")[0]).is_file(), f"the README links to a missing {target}"


def test_the_readme_has_the_examples_this_file_checks():
    # load and evaluate, train, gymnasium, the zoo; and one line for each of the main commands
    assert len(blocks("python")) >= 4 and len(navzoo_commands()) >= 7
    text = runnable_python()
    for marker in NOT_RUN:  # each exclusion still matches a line, or it is stale
        assert marker in "\n".join(blocks("python")) and marker not in text


def test_every_shell_line_runs_here_or_is_left_out_for_a_reason():
    lines = shell_lines()
    unclassified = [
        line for line in lines if not (_prefixed(line, SHELL_RUN) or _prefixed(line, SHELL_NOT_RUN))
    ]
    assert not unclassified, "add these README lines to SHELL_RUN or SHELL_NOT_RUN: " + "; ".join(
        unclassified
    )
    for key in (*SHELL_RUN, *SHELL_NOT_RUN):  # each entry still matches a line, or it is stale
        assert any(line.startswith(key) for line in lines), f"no README line starts with {key!r}"


@pytest.mark.parametrize("line", [line for line in shell_lines() if _prefixed(line, SHELL_RUN)])
def test_cheap_shell_lines_run(line, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copytree(locate("navzoo-pointnav-depth")[0], "runs/depth")  # stands for the run trained above
    extra, writes = SHELL_RUN[_prefixed(line, SHELL_RUN)]
    try:
        code = cli_main([*shlex.split(line)[1:], *extra])
    except SystemExit as exit_:  # --version exits as argparse's version action does
        code = exit_.code
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "deprecated" not in err  # the README writes the current spellings
    if line == "navzoo --version":
        assert out.startswith("navzoo ")
    if writes:
        assert (tmp_path / writes).is_file()


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
    assert "deprecated" not in capsys.readouterr().err  # the README writes the current spellings
    starts_a_run = argv[0] in ("train", "finetune") and "--resume" not in argv
    if starts_a_run:
        monkeypatch.chdir(tmp_path)
        assert cli_main([*argv, "--print-config"]) == 0, capsys.readouterr().err


def readme_table(header_start: str) -> list[dict[str, str]]:
    """The README's table whose header starts with `header_start`, as rows of cells."""
    lines = README.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    header = [c.strip() for c in lines[start].strip("|").split("|")]
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(dict(zip(header, (c.strip() for c in line.strip("|").split("|")), strict=True)))
    return rows


def test_the_zoo_tables_measured_numbers_are_those_of_the_result_file():
    results = json.loads(ZOO_EVAL.read_text())["results"]
    measured = [
        row for row in readme_table("| Name | Backbone |") if row["Weights"] == "shipped in the package"
    ]
    assert {row["Name"].strip("`") for row in measured} == {
        "navzoo-pointnav-depth",
        "navzoo-pointnav-rgb",
        "navzoo-pointnav-blind",
    }
    for row in measured:
        name = row["Name"].strip("`")
        for column, (split, metric) in ZOO_COLUMNS.items():
            cell = row[column]
            assert cell.endswith("³"), f"{name} {column}: {cell!r} lacks the mark of navzoo's measurements"
            expected = f"{results[split][name][metric]:.3f}"
            assert cell.removesuffix("³").strip() == expected, (
                f"README zoo table, {name} {column}: {cell!r}, but benchmarks/results/zoo/zoo_eval.json "
                f"has {expected} ({split} {metric}); copy the file's number"
            )


def test_the_round_trip_tables_numbers_are_those_of_the_result_file():
    result = json.loads(ROUND_TRIP.read_text())
    depth, navigable, ratio = result["depth"], result["navigable"], result["start_geodesic_ratio"]
    paired = {row["model"].removeprefix("navzoo-pointnav-"): row for row in result["paired"]}

    def spl(agent: str) -> str:
        return f"{paired[agent]['spl_difference']:+.3f} ± {paired[agent]['spl_ci95_half_width']:.3f}"

    expected = [
        f"{depth['within_1cm']:.2%} of {depth['pixels'] / 1e6:.1f}M pixels within 1 cm",
        f"{navigable['agree_away_from_boundaries']:.2%} away from the free-space boundary, "
        f"{navigable['agree']:.2%} of all",
        f"median {ratio['median']:.3f}, mean {ratio['mean']:.3f}; "
        f"{ratio['within_2_percent']:.0%} of episodes within 2%",
        f"{spl('depth')} (success {paired['depth']['success_difference']:+.3f})",
        f"{spl('rgb')} and {spl('blind')}",
    ]
    cells = [row["mesh against native"] for row in readme_table("| round trip |")]
    assert cells == expected, "copy the numbers of benchmarks/results/mesh_round_trip.json into the README"
