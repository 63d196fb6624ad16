"""Training: the loop, strategies, checkpoints and the fine-tuning driver."""
