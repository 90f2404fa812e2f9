"""The documentation site, built once per session by `mkdocs build --strict` into a temporary folder."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def docs_module(name: str):
    """A generator module of docs/gen (not a package), imported under a name of its own."""
    qualified = f"navzoo_docs_gen_{name}"
    if qualified in sys.modules:
        return sys.modules[qualified]
    spec = importlib.util.spec_from_file_location(qualified, DOCS / "gen" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[qualified] = module
    spec.loader.exec_module(module)
    return module


def mkdocs_build(*args: str) -> subprocess.CompletedProcess:
    """`mkdocs build --strict` with `args`, run from the repository, its output captured."""
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1", "OMP_NUM_THREADS": "1"},
    )


@pytest.fixture(scope="session")
def built_site(tmp_path_factory) -> Path:
    pytest.importorskip("mkdocs", reason="the docs need their extra: pip install -e '.[docs]'")
    site = tmp_path_factory.mktemp("site")
    done = mkdocs_build("--site-dir", str(site))
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}"
    return site
