"""The model zoo: the registry of named entries, the loader behind `navzoo.load`, habitat's released
DD-PPO checkpoints (fetched and converted) and the agents shipped inside the package (`weights/`)."""
