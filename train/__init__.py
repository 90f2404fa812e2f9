"""DD-PPO training backend: rollouts, PPO/GAE, distributed sync and preemption, checkpoints, evaluation."""
