#!/usr/bin/env bash
# Table 7 of the paper: CoNLL-2003 NER. Fine-tuning (dev and test F1, mean of SEEDS
# restarts at the best learning rate, as the paper's 5 restarts) and the feature-based
# approach: a frozen encoder, a two-layer 768-unit BiLSTM over each layer combination
# (embeddings, second_to_last, last, sum_last_four, concat_last_four, sum_all), dev F1.
#
#   reproduce/table7_ner.sh [--smoke] BERT_DIR CONLL_DIR [OUT_DIR]
#
# CONLL_DIR: train.txt, valid.txt, test.txt (IOB1 or IOB2). FEATURE_LAYERS, FEATURE_LRS
# (default 1e-3), FEATURE_EPOCHS (default 5), LSTM_UNITS (768) tune the feature runs; the
# frozen activations are computed once per layer combination and shared by its runs.
# --smoke: the first 30 sentences of each file, one epoch, seq 32, 16 LSTM units.
source "$(dirname "$0")/common.sh"
TABLE=table7
(( ${#ARGS[@]} >= 2 )) || die "usage: $0 [--smoke] BERT_DIR CONLL_DIR [OUT_DIR]"
BERT_DIR="${ARGS[0]}"; CONLL_DIR="${ARGS[1]}"
need_dir "$BERT_DIR" "BERT"; need_dir "$CONLL_DIR" "CoNLL"
setup_out table7_ner "${ARGS[2]:-}"

LRS="${LRS:-5e-5 4e-5 3e-5 2e-5}"; SEEDS="${SEEDS:-1 2 3 4 5}"; SELECT=mean
EPOCHS="${EPOCHS:-3}"; BATCH="${BATCH:-32}"; SEQ=128
FEATURE_LAYERS="${FEATURE_LAYERS:-embeddings second_to_last last sum_last_four concat_last_four sum_all}"
FEATURE_LRS="${FEATURE_LRS:-1e-3}"; FEATURE_EPOCHS="${FEATURE_EPOCHS:-5}"
LSTM_UNITS="${LSTM_UNITS:-768}"
if (( SMOKE )); then
  LRS=5e-5; SEEDS=1; EPOCHS=1; BATCH=8; SEQ=32; FEATURE_EPOCHS=1; LSTM_UNITS=16
  FEATURE_LAYERS="${FEATURE_LAYERS_SMOKE:-last sum_all}"
fi
smoke_conll "$CONLL_DIR"

echo "== fine-tuning"
finetune_ner "Fine-tuning" "CoNLL-2003 F1" "$BERT_DIR"
for layers in $FEATURE_LAYERS; do
  echo "== feature-based: $layers"
  EPOCHS="$FEATURE_EPOCHS" NER_LRS="$FEATURE_LRS" finetune_ner "Feature: $layers" \
    "CoNLL-2003 F1" "$BERT_DIR" --mode=feature --feature_layers="$layers" \
    --lstm_units="$LSTM_UNITS" --feature_cache_dir="$OUT/feature_cache/$layers"
done
finish
