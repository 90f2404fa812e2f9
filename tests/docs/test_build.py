"""The site builds with --strict, and its generated reference pages cover every command, option and config
field."""

import argparse
import dataclasses
import json
from pathlib import Path

import pytest

from navzoo.cli.main import COMMANDS, build_parser
from tests.docs.conftest import DOCS, docs_module, mkdocs_build

reference = docs_module("reference")
results = docs_module("results")
tables = docs_module("tables")
RESULT_PAGES = ("results/agents", "results/transfer", "results/simulator")


def test_the_site_builds_strictly_with_the_generated_pages(built_site):
    for page in ("reference/cli", "reference/config", "reference/api", "results", "design/architecture"):
        assert (built_site / page / "index.html").is_file(), page
    architecture = (built_site / "design" / "architecture" / "index.html").read_text()
    assert "Where to add things" in architecture  # ARCHITECTURE.md, included at build time
    api = (built_site / "reference" / "api" / "index.html").read_text()
    for name in ("navzoo.zoo.loader.load", "navzoo.sim.batch_sim.BatchSim", "navzoo.train.trainer.train"):
        assert name in api, name


def test_the_cli_page_names_every_command_and_option():
    page = reference.cli_page()
    for name in COMMANDS:
        parser = build_parser(name)
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[name]
        assert f"## navzoo {name}" in page
        for action in sub._actions:
            for option in action.option_strings:
                assert f"`{option}" in page, f"navzoo {name} {option}"


def test_the_config_page_has_every_field_with_a_meaning():
    page = reference.config_page()  # raises for a field without a meaning
    for _, _, classes in reference.CONFIG_SECTIONS:
        for path, prefix in classes:
            cls = reference._import(path)
            for field in dataclasses.fields(cls):
                assert f"| `{prefix}{field.name}` |" in page, f"{cls.__name__}.{field.name}"


def test_a_comment_above_several_fields_describes_those_it_names():
    @dataclasses.dataclass
    class Example:
        # The first warm-up, then second_field's.
        first_field: int = 0
        second_field: int = 1
        third_field: int = 2  # its own

        fourth_field: int = 3

    comments = reference.field_comments(Example)
    assert comments["first_field"] == comments["second_field"] == "The first warm-up, then second_field's."
    assert comments["third_field"] == "its own"
    assert "fourth_field" not in comments


def test_results_tables_come_from_every_json_file(tmp_path):
    machine = {"cpu": "Test CPU", "cores": 2}
    data = {"machine": machine, "results": {"rows": [{"envs": 4, "fps": 1234.5}], "seconds": 3}}
    (tmp_path / "bench-cpu.json").write_text(json.dumps(data))
    page = results.results_page(tmp_path)
    assert "## bench-cpu" in page and "cpu Test CPU, cores 2" in page
    assert "| envs | fps |" in page and "| 4 | 1,234.5 |" in page and "seconds = 3" in page
    real = results.results_page()
    for path in Path(results.RESULTS).rglob("*.json"):  # the subfolders' files too
        assert f"## {path.relative_to(results.RESULTS).with_suffix('').as_posix()}" in real
    assert (
        "## zoo/zoo_eval" in real and "## transfer/flee-rgb" in real and "## learning/learning_curves" in real
    )


def test_the_results_pages_tables_are_generated_from_the_result_files(built_site):
    """No placeholder is left, each generated table names its file, the pages hold no hand-made table, and
    the numbers of their sentences are the files' values."""
    for page in RESULT_PAGES:
        source = (DOCS / f"{page}.md").read_text()
        assert "results-table:" in source, page
        assert not [line for line in source.splitlines() if line.startswith("|")], (
            f"{page}: a hand-made table"
        )
        html = (built_site / page / "index.html").read_text()
        assert "results-table" not in html and "<table>" in html, page
        assert "<!-- result:" not in html, f"{page}: an inline placeholder is left"
        assert "benchmarks/results/" in html, page
    agents = (built_site / "results" / "agents" / "index.html").read_text()
    zoo = json.loads((Path(results.RESULTS) / "zoo" / "zoo_eval.json").read_text())["results"]
    assert f"{zoo['val']['navzoo-pointnav-depth']['spl']:.3f}" in agents
    runs = json.loads((Path(results.RESULTS) / "learning" / "learning_curves.json").read_text())
    shipped = list(runs["runs/depth-ks01"].values())[-1]  # the shipped depth agent's run, its last point
    assert f"{shipped['hours']:.2f} h" in agents


def test_a_placeholder_renders_the_files_records_with_its_caption(tmp_path):
    data = {
        "machine": {"cpu": "Test CPU"},
        "results": {"a": {"spl": 0.51234, "ci": [0.1, 0.9]}, "b": {"spl": 1.0}},
    }
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "eval.json").write_text(json.dumps(data))
    page = (
        "<!-- results-table: sub/eval.json\nrows: results\ncolumns: {Agent: '{key}', SPL: '{spl:.2f}'}\n-->"
    )
    out = tables.render_placeholders(page, "test.md", tmp_path)
    assert "`benchmarks/results/sub/eval.json`" in out and "cpu Test CPU" in out
    assert "| Agent | SPL |" in out and "| a | 0.51 |" in out and "| b | 1.00 |" in out


def test_an_inline_placeholder_renders_one_value_in_a_sentence(tmp_path):
    data = {
        "machine": {"cpu": "Test CPU"},
        "results": {"rows": [{"envs": 16, "fps": 1234.56}, {"envs": 256, "fps": 51106.2}]},
        "runs/a": {"ckpt-1.pt": {"spl": 0.25}, "ckpt-2.pt": {"spl": 0.5}},  # a run's checkpoints
        "ratios": {"1.0": 1.08, "0.5": 0.917},
    }
    (tmp_path / "bench.json").write_text(json.dumps(data))
    page = (
        "A <!-- result: bench.json results.rows[1].fps :,.0f --> B, "
        "<!-- result: bench.json results.rows[0].fps--> C, "
        "<!-- result: bench.json runs/a[-1].spl :.2f --> D, "
        "<!-- result: bench.json runs/a[ckpt-1.pt].spl:.2f --> E, "
        "<!-- result: bench.json ratios[0.5] :.2f --> F, "
        "<!-- result: bench.json {rows: results.rows, where: {envs: 16},\n"
        "  value: '{fps:.1f} at {envs}'} --> G, "
        "<!-- result: bench.json\nvalue: '{machine.cpu}'\n--> H."
    )
    out = tables.render_placeholders(page, "test.md", tmp_path)
    assert out == "A 51,106 B, 1,234.6 C, 0.50 D, 0.25 E, 0.92 F, 1234.6 at 16 G, Test CPU H."


@pytest.mark.parametrize(
    ("placeholder", "message"),
    [
        ("<!-- result: bench.json results.rows[5].fps -->", "no item [5] at `results.rows[5].fps`"),
        ("<!-- result: bench.json results.rows -->", "`results.rows` is not a single value"),
        ("<!-- result: bench.json {rows: results.rows, value: '{fps}'} -->", "leaves 2 rows, not one"),
        ("<!-- result: bench.json {columns: [fps]} -->", "a mapping with `value`"),
        ("<!-- result: nowhere.json fps -->", "no result file benchmarks/results/nowhere.json"),
    ],
)
def test_an_inline_placeholder_without_exactly_one_value_names_the_page_and_file(
    tmp_path, placeholder, message
):
    (tmp_path / "bench.json").write_text(json.dumps({"results": {"rows": [{"fps": 1}, {"fps": 2}]}}))
    with pytest.raises(tables.TableError) as error:
        tables.render_placeholders(f"Some {placeholder} frames/s.", "docs/page.md", tmp_path)
    assert str(error.value).startswith("docs/page.md: result ") and message in str(error.value)


@pytest.mark.parametrize(
    ("placeholder", "message"),
    [
        (
            "<!-- results-table: nowhere/missing.json\ncolumns: [spl] -->",
            "results-table nowhere/missing.json: no result file benchmarks/results/nowhere/",
        ),
        (
            "<!-- results-table: zoo/zoo_eval.json\nrows: results.val\ncolumns: {SPL: '{no_such_key}'} -->",
            "results-table zoo/zoo_eval.json: no key 'no_such_key'",
        ),
        (
            "SPL <!-- result: zoo/zoo_eval.json results.val.nobody.spl :.3f --> on val.",
            "result zoo/zoo_eval.json: no key 'nobody'",
        ),
    ],
)
def test_a_placeholder_naming_a_missing_file_or_key_fails_the_build(tmp_path, placeholder, message):
    pytest.importorskip("mkdocs", reason="the docs need their extra: pip install -e '.[docs]'")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text(f"# Broken\n\n{placeholder}\n")
    config = tmp_path / "mkdocs.yml"
    config.write_text(
        f"site_name: broken\ndocs_dir: {docs}\nsite_dir: {tmp_path / 'site'}\nstrict: true\n"
        f"hooks:\n  - {DOCS / 'gen' / 'hooks.py'}\nnav:\n  - index.md\n"
    )
    done = mkdocs_build("--config-file", str(config))
    assert done.returncode != 0
    output = done.stdout + done.stderr
    assert f"docs/index.md: {message}" in output, output
