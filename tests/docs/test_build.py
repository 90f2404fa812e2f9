"""The site builds with --strict, and its generated reference pages cover every command, option and config
field."""

import argparse
import dataclasses
import json
from pathlib import Path

from navzoo.cli.main import COMMANDS, build_parser
from tests.docs.conftest import docs_module

reference = docs_module("reference")
results = docs_module("results")


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
    page = reference.config_page()  # raises for a field without a meaning, or a stale note
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
    for path in Path(results.RESULTS).glob("*.json"):
        assert f"## {path.stem}" in real
