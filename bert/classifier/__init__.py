"""Sentence (pair) classification: GLUE, XNLI, users' TSV/CSV files."""
