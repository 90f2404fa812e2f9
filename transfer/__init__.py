"""Transfer of PointGoal models to Flee and Explore: DD-PPO's five settings (section 6, appendices F-G).

    import navzoo
    from navzoo.transfer import build_setting
    policy, record = build_setting("pointgoal-finetune", navzoo.load("navzoo-pointnav-rgb"))

`navzoo finetune` trains one setting on the DD-PPO backend (navzoo.transfer.finetune.finetune) or all
five as a sweep with a performance-vs-frames plot (navzoo.transfer.sweep.run_sweep). Those modules load
the training stack, so they are not imported here.
"""

from navzoo.transfer.config import TransferConfig, transfer_train_config
from navzoo.transfer.imagenet import ImageNetWeightsError
from navzoo.transfer.settings import SETTINGS, build_setting, setting_id

__all__ = [
    "SETTINGS",
    "ImageNetWeightsError",
    "TransferConfig",
    "build_setting",
    "setting_id",
    "transfer_train_config",
]
