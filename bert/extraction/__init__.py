"""Contextual embeddings of chosen layers (extract_features)."""
