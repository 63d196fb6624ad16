"""Pretraining: vocabularies, the data generator and the masked-LM / NSP task."""
