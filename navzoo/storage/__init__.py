"""Files and downloads: where commands may write, reading PyTorch files safely, resumable HTTP downloads
and the Hugging Face Hub cache. Nothing here knows models or the simulator."""
