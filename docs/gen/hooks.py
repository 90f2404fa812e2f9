"""mkdocs hooks (mkdocs.yml `hooks:`): generate the reference and results pages at build time, and lay out
the package for mkdocstrings.

- The CLI and configuration references (docs/gen/reference.py) and the results index (docs/gen/results.py)
  are added to the site as generated files, never written into docs/, so they cannot go stale.
- The tables of the hand-written results pages (docs/results/*.md) are results-table placeholders that
  `on_page_markdown` replaces with tables generated from the result files, and the numbers in their
  sentences are inline result placeholders it replaces with one value of a file (docs/gen/tables.py); a
  placeholder naming a file, path or field that is not there fails the build.
- The figures the benchmarks saved (benchmarks/results/**/*.png) are added as results/figures/<path>, so
  the results pages show them from where the README does, without a copy in docs/.
- train/, transfer/, hub/ and demo/ install as navzoo.train and so on (pyproject's package-dir), a layout
  griffe cannot see from the source tree: links under build/docs-api/navzoo give it, as `make typecheck`
  does for pyright. mkdocs.yml points mkdocstrings at build/docs-api.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
FIGURES = ROOT / "benchmarks" / "results"
API_TREE = ROOT / "build" / "docs-api" / "navzoo"
SUBPACKAGES = ("train", "transfer", "hub", "demo")  # installed as navzoo.<name>

sys.path.insert(0, str(HERE))

import reference  # noqa: E402
import results  # noqa: E402
import tables  # noqa: E402

GENERATED = {
    "reference/cli.md": reference.cli_page,
    "reference/config.md": reference.config_page,
    "results/index.md": results.results_page,
}


def link_api_tree(target: Path = API_TREE) -> None:
    """build/docs-api/navzoo: a link to every entry of navzoo/ and to the subpackages kept at the root."""
    target.mkdir(parents=True, exist_ok=True)
    wanted = {p.name: p for p in (ROOT / "navzoo").iterdir() if p.name != "__pycache__"}
    wanted.update({name: ROOT / name for name in SUBPACKAGES})
    for link in target.iterdir():
        if link.name not in wanted or not link.is_symlink() or link.resolve() != wanted[link.name].resolve():
            link.unlink()
    for name, source in wanted.items():
        if not (target / name).is_symlink():
            (target / name).symlink_to(source)


# Before mkdocstrings reads its `paths`: on a fresh clone the tree does not exist until this runs.
@event_priority(100)
def on_config(config):
    link_api_tree()
    return config


def on_files(files, config):
    for uri, make in GENERATED.items():
        files.append(File.generated(config, uri, content=make()))
    for figure in sorted(FIGURES.rglob("*.png")):
        uri = f"results/figures/{figure.relative_to(FIGURES).as_posix()}"
        files.append(File.generated(config, uri, abs_src_path=str(figure)))
    return files


def on_page_markdown(markdown, page, config, files):
    try:
        return tables.render_placeholders(markdown, f"docs/{page.file.src_uri}")
    except tables.TableError as error:
        raise PluginError(str(error)) from None
