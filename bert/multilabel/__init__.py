"""Multi-label classification (one sigmoid per label)."""
