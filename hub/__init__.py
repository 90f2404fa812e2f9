"""Hugging Face Hub publishing (`navzoo push`, model cards) and the `navzoo pull` and `navzoo convert` command
lines. Fetching weights and converting habitat checkpoints are the core's: navzoo.weight_sources and
navzoo.zoo.habitat_checkpoints."""
