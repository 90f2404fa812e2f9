"""The names navzoo's users type or read: tasks, splits, sensors, scene families, actions, baselines, action
modes, and the files of a model folder.

They live here, apart from the code that gives them meaning, so that the command line can build its
parsers (choices and help) without importing torch, and so that layers that do not know each other agree on
them (the Hub transport, navzoo.storage.hf_hub, fetches the files of navzoo.models.weights' format). The
modules that define them check against these (navzoo.tasks, navzoo.agents.baselines; tests/test_cli.py).
"""

TASKS = ("pointnav", "flee", "explore")
GYM_IDS = {"pointnav": "PointNav", "flee": "Flee", "explore": "Explore"}  # gymnasium's navzoo/<id>-v0
SPLITS = ("train", "val", "test")
SENSORS = ("depth", "rgb", "seen_map")
# PointGoal's GPS+Compass sensor: the goal as (rho, phi) in the agent's frame (habitat's name).
GOAL_SENSOR = "pointgoal_with_gps_compass"
CAMERAS = ("depth", "rgb")  # the sensors rendered as images
# The egocentric map of what the agent has seen and where it has been (navzoo.sim.map_sensor), built from
# its depth images and pose.
SEEN_MAP = "seen_map"
SEEN_MAP_CHANNELS = 2  # seen walls, visited cells
MAX_SEEN_MAP_SIZE = 256  # squares per side of the seen_map sensor's crop
SCENE_FAMILIES = ("apartment-s", "apartment", "office", "office-l")
RENDERERS = ("auto", "numba", "torch")
# Action ids follow habitat: 0 stop, 1 move_forward, 2 turn_left, 3 turn_right.
ACTION_NAMES = ("stop", "move_forward", "turn_left", "turn_right")
BASELINES = ("random", "forward-only", "goal-follower", "oracle", "map-planner")
GOAL_BASELINES = ("goal-follower", "oracle", "map-planner")  # they read PointGoal's goal
GOALLESS_BASELINES = tuple(b for b in BASELINES if b not in GOAL_BASELINES)  # the ones Flee / Explore run
ACTION_MODES = ("sampled", "deterministic")  # how a model picks its action
# A model folder (navzoo.models.weights): the architecture and metadata, and the parameters.
CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"
