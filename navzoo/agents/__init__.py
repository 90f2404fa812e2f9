"""Agents that act in the simulator: the non-learning baselines and the map planner, the steering they
share, and a trained policy wrapped as an evaluation agent."""
