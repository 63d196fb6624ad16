"""Export formats, one module each: SavedModels for serving, TF-Hub modules, Hugging Face
directories, keras-hub presets, LiteRT models (writers.py: the table of export_encoder's)."""
