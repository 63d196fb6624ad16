"""Prediction with the LiteRT models of an export, without TensorFlow (predict_litert.py)."""
