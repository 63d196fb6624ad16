"""Token tagging: any CoNLL column, CoNLL-2003 NER."""
