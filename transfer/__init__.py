"""Transfer of PointGoal models to Flee and Explore: DD-PPO's five settings (section 6, appendices F-G).

    import navzoo
    from navzoo.transfer import build_setting
    policy, record = build_setting("pointgoal-finetune", navzoo.load("navzoo-pointnav-rgb"))

`navzoo finetune` trains one setting on the DD-PPO backend (navzoo.transfer.finetune.finetune) or all
five as a sweep with a performance-vs-frames plot (navzoo.transfer.sweep.run_sweep). Those modules load
the training stack, so they are not imported here.
"""

from typing import TYPE_CHECKING

from navzoo.lazy_exports import lazy_exports

if TYPE_CHECKING:  # the lazy names below, for type checkers and editors
    from navzoo.transfer.config import TransferConfig, transfer_train_config
    from navzoo.transfer.imagenet import ImageNetWeightsError
    from navzoo.transfer.setting_names import SETTINGS, setting_id
    from navzoo.transfer.settings import build_setting

# name -> module; imported on first use, so `navzoo finetune --help` does not load torch
_EXPORTS = {
    "TransferConfig": "navzoo.transfer.config",
    "transfer_train_config": "navzoo.transfer.config",
    "ImageNetWeightsError": "navzoo.transfer.imagenet",
    "SETTINGS": "navzoo.transfer.setting_names",
    "setting_id": "navzoo.transfer.setting_names",
    "build_setting": "navzoo.transfer.settings",
}
__all__ = [
    "SETTINGS",
    "ImageNetWeightsError",
    "TransferConfig",
    "build_setting",
    "setting_id",
    "transfer_train_config",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
