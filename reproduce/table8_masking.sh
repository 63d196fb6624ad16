#!/usr/bin/env bash
# Table 8 of the paper: masking strategies. For each mix of [MASK] / same token / random
# token among the positions chosen for prediction, creates pretraining data
# (create_pretraining_data --mask_token_prob --random_token_prob), pretrains a model on
# CORPUS, and reports MNLI-m dev accuracy, NER dev F1 fine-tuned and NER dev F1
# feature-based (concatenation of the last four layers).
#
#   reproduce/table8_masking.sh [--smoke] BERT_DIR CORPUS GLUE_DIR CONLL_DIR [OUT_DIR]
#
# MIXES="MASK:SAME:RND ..." in percent (default the paper's six). BERT_DIR gives the
# vocabulary and the architecture. --smoke: one mix, a hidden-32 model, 3 steps, MRPC for
# MNLI (TASK to change), the "last" layer for the feature run.
source "$(dirname "$0")/common.sh"
TABLE=table8
(( ${#ARGS[@]} >= 4 )) || die "usage: $0 [--smoke] BERT_DIR CORPUS GLUE_DIR CONLL_DIR [OUT_DIR]"
BERT_DIR="${ARGS[0]}"; CORPUS="${ARGS[1]}"; GLUE_DIR="${ARGS[2]}"; CONLL_DIR="${ARGS[3]}"
need_dir "$BERT_DIR" "BERT"; need_dir "$GLUE_DIR" "GLUE"; need_dir "$CONLL_DIR" "CoNLL"
[[ -f "$CORPUS" ]] || die "corpus '$CORPUS' does not exist"
setup_out table8_masking "${ARGS[4]:-}"
vocab_settings "$BERT_DIR"; pretrain_settings

MIXES="${MIXES:-80:10:10 100:0:0 80:0:20 80:20:0 0:20:80 0:0:100}"
LRS="${LRS:-5e-5 4e-5 3e-5 2e-5}"; SEEDS="${SEEDS:-1}"; SELECT=best
EPOCHS="${EPOCHS:-3}"; BATCH="${BATCH:-32}"; SEQ=128; TASK="${TASK:-MNLI}"
FEATURE_LAYERS=concat_last_four; FEATURE_LRS="${FEATURE_LRS:-1e-3}"
FEATURE_EPOCHS="${FEATURE_EPOCHS:-5}"; LSTM_UNITS="${LSTM_UNITS:-768}"
if (( SMOKE )); then
  MIXES="${MIXES_SMOKE:-80:10:10}"; LRS=5e-5; SEEDS=1; EPOCHS=1; BATCH=8; SEQ=32
  TASK="${TASK_SMOKE:-MRPC}"; FEATURE_LAYERS=last; FEATURE_EPOCHS=1; LSTM_UNITS=16
fi
smoke_conll "$CONLL_DIR"
make_config "$BERT_DIR/bert_config.json" "$OUT/bert_config.json"

for mix in $MIXES; do
  IFS=: read -r mask same rnd <<< "$mix"
  row="MASK $mask SAME $same RND $rnd"; name="mask${mask}_same${same}_rnd${rnd}"
  echo "== $row"
  record_file="$(pretraining_data "$name" "$CORPUS" \
    --mask_token_prob="$(awk "BEGIN { print $mask / 100 }")" \
    --random_token_prob="$(awk "BEGIN { print $rnd / 100 }")")"
  pretrain "$name" "$OUT/bert_config.json" "$record_file"
  model_dir="$OUT/pretrain/$name/pretrained"
  finetune_glue "$row" "MNLI-m" "$TASK" "$model_dir"
  finetune_ner "$row" "NER fine-tune" "$model_dir"
  EPOCHS="$FEATURE_EPOCHS" NER_LRS="$FEATURE_LRS" finetune_ner "$row" "NER feature-based" \
    "$model_dir" --mode=feature --feature_layers="$FEATURE_LAYERS" --lstm_units="$LSTM_UNITS" \
    --feature_cache_dir="$OUT/feature_cache/$name"
done
finish
