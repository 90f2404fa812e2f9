"""Where a zoo model's weights come from, fetched into a local model folder (config.json +
model.safetensors): the Hugging Face Hub (hf_hub) and habitat's released DD-PPO checkpoints
(habitat_release). navzoo.zoo picks the source of each entry."""
