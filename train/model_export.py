"""The trained model at the top of a run folder (config.json + model.safetensors, so navzoo.load(run_dir)
works), replaced at every checkpoint."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from navzoo.models import ActorCritic
from navzoo.models.weights import save_pretrained
from navzoo.names import WEIGHTS_NAME
from navzoo.storage.atomic import removed_on_failure


def export_model(policy: ActorCritic, run_dir: Path, provenance: dict[str, Any]) -> None:
    """Write the model into a staging folder, then move its files over the run folder's. A failed write (a
    full disk) removes the staging folder and leaves the model exported before."""
    staging = run_dir / ".export"  # one name: only the process holding the run folder's lock writes here
    shutil.rmtree(staging, ignore_errors=True)
    with removed_on_failure(staging, run_dir / WEIGHTS_NAME):
        save_pretrained(policy, staging, name=run_dir.name, provenance=provenance)
        for item in staging.iterdir():
            os.replace(item, run_dir / item.name)
        staging.rmdir()


def training_episodes(metrics: dict[str, float]) -> dict[str, float]:
    """The episode metrics of the latest update's log line, by name."""
    return {k.removeprefix("episode/"): v for k, v in metrics.items() if k.startswith("episode/")}
