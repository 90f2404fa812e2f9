"""Weight files, model cards, Hugging Face Hub publishing and conversion of habitat-baselines checkpoints."""
