#!/usr/bin/env bash
# Table 6 of the paper: model size. Pretrains one model per size (L layers, H hidden,
# A heads; intermediate 4H) on CORPUS, reports its masked-LM perplexity on held-out
# documents (every 20th document of CORPUS) and its dev accuracy on MNLI-m, MRPC and
# SST-2, averaged over the SEEDS fine-tuning restarts (the paper averaged 5).
#
#   reproduce/table6_model_sizes.sh [--smoke] BERT_DIR CORPUS GLUE_DIR [OUT_DIR]
#
# SIZES="L:H:A ..." (default the paper's six, 3:768:12 to 24:1024:16). BERT_DIR gives the
# vocabulary and the other config values. --smoke: sizes 1:32:4 and 2:32:4, 3 steps, MRPC.
source "$(dirname "$0")/common.sh"
TABLE=table6
(( ${#ARGS[@]} >= 3 )) || die "usage: $0 [--smoke] BERT_DIR CORPUS GLUE_DIR [OUT_DIR]"
BERT_DIR="${ARGS[0]}"; CORPUS="${ARGS[1]}"; GLUE_DIR="${ARGS[2]}"
need_dir "$BERT_DIR" "BERT"; need_dir "$GLUE_DIR" "GLUE"
setup_out table6_model_sizes "${ARGS[3]:-}"
vocab_settings "$BERT_DIR"; pretrain_settings

SIZES="${SIZES:-3:768:12 6:768:3 6:768:12 12:768:12 12:1024:16 24:1024:16}"
LRS="${LRS:-5e-5 4e-5 3e-5 2e-5}"; SEEDS="${SEEDS:-1 2 3 4 5}"; SELECT=mean
EPOCHS="${EPOCHS:-3}"; BATCH="${BATCH:-32}"; SEQ=128
TASKS="${TASKS:-MNLI MRPC SST-2}"
if (( SMOKE )); then
  SIZES="1:32:4 2:32:4"; LRS=5e-5; SEEDS=1; EPOCHS=1; BATCH=8; SEQ=32
  TASKS="${TASKS_SMOKE:-MRPC}"
fi

split_corpus "$CORPUS"
RECORD="$(pretraining_data train "$TRAIN_CORPUS")"
HELDOUT="$(pretraining_data heldout "$HELDOUT_CORPUS" --dupe_factor=1 --random_seed=54321)"
for size in $SIZES; do
  IFS=: read -r L H A <<< "$size"
  row="L=$L H=$H A=$A"; name="L${L}_H${H}_A${A}"
  echo "== $row"
  make_config "$BERT_DIR/bert_config.json" "$OUT/config_$name.json" "$L" "$H" "$A"
  pretrain "$name" "$OUT/config_$name.json" "$RECORD"
  model_dir="$OUT/pretrain/$name/pretrained"
  dir="$OUT/pretrain/$name/heldout_eval"
  run_once "$dir/eval_results.txt" "$dir.log" -- "$PYTHON" "$REPO/run_pretraining.py" \
    --input_file="$HELDOUT" --bert_config_file="$model_dir/bert_config.json" \
    --init_checkpoint="$model_dir/bert_model.ckpt" --do_eval --eval_batch_size=8 \
    --max_seq_length="$PRETRAIN_SEQ" --max_predictions_per_seq="$MAX_PRED" \
    --output_dir="$dir" || true
  record "$row" "LM (ppl)" - 1 best "$dir/eval_results.txt" "exp(masked_lm_loss)"
  for task in $TASKS; do
    column="$task"; [[ "$task" == MNLI ]] && column="MNLI-m"
    finetune_glue "$row" "$column" "$task" "$model_dir"
  done
done
finish
