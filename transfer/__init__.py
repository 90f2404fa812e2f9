"""Transfer of PointGoal models to Flee and Explore: DD-PPO's five settings (section 6, appendices F-G).

    from navzoo.transfer import build_setting, load_base
    policy, record = build_setting("pointgoal-finetune", load_base("navzoo-pointnav-rgb"))

`navzoo finetune` trains one setting on the DD-PPO backend (navzoo.transfer.finetune) or all five as a
sweep with a performance-vs-frames plot (navzoo.transfer.sweep).
"""

from navzoo.transfer.config import TransferConfig, transfer_train_config
from navzoo.transfer.finetune import finetune, load_base
from navzoo.transfer.imagenet import ImageNetWeightsError
from navzoo.transfer.settings import SETTINGS, build_setting, setting_id

__all__ = [
    "SETTINGS",
    "ImageNetWeightsError",
    "TransferConfig",
    "build_setting",
    "finetune",
    "load_base",
    "setting_id",
    "transfer_train_config",
]
