"""The Gradio replay demo."""
