"""mkdocs hooks (mkdocs.yml `hooks:`): generate the reference and results pages at build time, and lay out
the package for mkdocstrings.

- The CLI and configuration references (docs/gen/reference.py) and the results index (docs/gen/results.py)
  are added to the site as generated files, never written into docs/, so they cannot go stale.
- train/, transfer/, hub/ and demo/ install as navzoo.train and so on (pyproject's package-dir), a layout
  griffe cannot see from the source tree: links under build/docs-api/navzoo give it, as `make typecheck`
  does for pyright. mkdocs.yml points mkdocstrings at build/docs-api.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mkdocs.structure.files import File

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
API_TREE = ROOT / "build" / "docs-api" / "navzoo"
SUBPACKAGES = ("train", "transfer", "hub", "demo")  # installed as navzoo.<name>

sys.path.insert(0, str(HERE))

import reference  # noqa: E402
import results  # noqa: E402

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


def on_config(config):
    link_api_tree()
    return config


def on_files(files, config):
    for uri, make in GENERATED.items():
        files.append(File.generated(config, uri, content=make()))
    return files
