"""What a model is, beside its architecture: its name, the task it was trained for and where it comes from.

Every policy config carries one (`PolicyConfig.metadata`, `NeuralControllerConfig.metadata`), set when the
model is built. It never changes the parameters, so configs compare and hash without it, and config.json
keeps it beside the architecture block, as its top-level `name`, `task` and `provenance`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from navzoo.config_base import Config
from navzoo.tasks import PointGoal, get_task
from navzoo.typed_config import check_field_types

METADATA_KEYS = ("name", "task", "provenance")  # config.json's top-level keys, as the fields are named


@dataclass(frozen=True)
class ModelMetadata(Config):
    name: str | None = None  # a zoo name or a run's name; None for an unnamed model
    task: str = PointGoal.name  # the task it was trained for: model folders written before transfer omit it
    provenance: dict[str, Any] | None = None  # paper, original file, training config, ... (JSON data)

    def __post_init__(self):
        check_field_types(self)
        get_task(self.task)

    def or_else(self, fallback: ModelMetadata) -> ModelMetadata:
        """These metadata, with `fallback`'s name and provenance where they have none."""
        return self.replace(
            name=self.name or fallback.name, provenance=self.provenance or fallback.provenance
        )


def training_records(provenance: dict[str, Any] | None) -> list[dict[str, Any]]:
    """A trained model's provenance followed by those of the models it was initialised from, each held in
    the one before as `initialised_from` (navzoo train init_from=...): the latest run first, the run that
    trained from scratch last."""
    records, record = [], provenance
    while record:
        records.append(record)
        record = record.get("initialised_from")
    return records
