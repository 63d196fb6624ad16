"""SQuAD v1.1 and v2.0: reading, windows, decoding and the official scorer."""
