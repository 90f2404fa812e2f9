"""Transfer of PointGoal checkpoints to the Flee and Explore tasks."""
