"""navzoo's environments in gymnasium's registry: navzoo/PointNav-v0, navzoo/Flee-v0 and navzoo/Explore-v0.

`import navzoo` registers them, so gymnasium's module prefix makes them from a fresh interpreter:
`gymnasium.make("navzoo:navzoo/PointNav-v0")` (gymnasium 1.x has no import-free plugin mechanism). The
entry points are strings, so nothing of the simulator is imported before an environment is made. Episodes
end at `max_episode_steps` (500, or make's or make_vec's max_episode_steps) with their metrics, made either
way (navzoo.interop.gym_env).
"""

import gymnasium

from navzoo.names import GYM_IDS

MAX_EPISODE_STEPS = 500  # SimConfig.max_episode_steps, habitat's PointNav limit


def register_envs() -> None:
    for task, gym_id in GYM_IDS.items():
        env_id = f"navzoo/{gym_id}-v0"
        if env_id not in gymnasium.registry:
            gymnasium.register(
                env_id,
                entry_point="navzoo.interop.gym_env:make_env",
                vector_entry_point="navzoo.interop.gym_env:NavVectorEnv",
                kwargs={"task": task},
                max_episode_steps=MAX_EPISODE_STEPS,
            )
