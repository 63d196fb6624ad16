"""What a pretrained model computes on raw text: contextual embeddings of chosen layers
(extract_features) and the masked-LM head's predictions for each [MASK] (fill_mask)."""
