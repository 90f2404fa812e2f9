"""The five transfer settings' ids, DD-PPO names and descriptions (navzoo.transfer.settings builds them),
importable without torch so that `navzoo finetune --help` lists them at once."""

from __future__ import annotations

from dataclasses import dataclass

from navzoo.errors import ConfigError, closest


@dataclass(frozen=True)
class Setting:
    id: str
    label: str  # the name DD-PPO's Fig. 5 uses
    description: str


SETTINGS = {
    s.id: s
    for s in (
        Setting("scratch", "Scratch", "visual encoder and policy trained from scratch"),
        Setting(
            "imagenet-encoder",
            "ImageNetEncoder-ScratchPolicy",
            "frozen ImageNet-pretrained timm encoder, policy from scratch",
        ),
        Setting(
            "pointgoal-encoder",
            "PointGoalNavEncoder-ScratchPolicy",
            "frozen PointGoal visual encoder, policy from scratch",
        ),
        Setting(
            "pointgoal-finetune",
            "PointGoalNavEncoder-FinetunePolicy",
            "frozen PointGoal encoder, PointGoal policy fine-tuned with a dummy goal, new critic",
        ),
        Setting(
            "neural-controller",
            "Neural Controller",
            "frozen PointGoal policy as a differentiable controller steered by a trained planner",
        ),
    )
}


def setting_id(name: str) -> str:
    """A setting id from its id or its DD-PPO name (any case)."""
    for setting in SETTINGS.values():
        if name.lower() in (setting.id, setting.label.lower()):
            return setting.id
    names = [name for s in SETTINGS.values() for name in (s.id, s.label.lower())]
    raise ConfigError("setting", name, tuple(SETTINGS), suggestion=closest(name.lower(), names))
