"""Adapting a pretrained model to a domain or a language: more positions
(extend_positions.py) and more words (extend_vocab.py --init_checkpoint), each written in
Google's layout for continued pretraining and fine-tuning to start from."""
