"""Export formats: SavedModels for serving, TF-Hub modules, Hugging Face directories."""
