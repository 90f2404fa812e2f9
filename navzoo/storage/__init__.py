"""Files and downloads: where commands may write, locks that keep a second process out of a folder, atomic
writes that survive a full disk, reading PyTorch files safely, resumable HTTP downloads and the Hugging Face
Hub cache. Nothing here knows models or the simulator."""
