"""The training loop and what it needs: components, evaluation, checkpoints."""
