# Shared by the table scripts (sourced, not run). Each table script:
#   * takes its checkpoint and data folders as positional arguments, plus an optional
#     output folder (default out/reproduce/<table>);
#   * with --smoke, runs the same commands for real on a few rows of the same data,
#     one learning rate and one seed, in seconds per run (what tests/reproduce/test_reproduce.py does);
#   * records every run in <out>/runs.tsv, which reproduce/aggregate.py turns into the
#     paper-vs-ours table. A finished run (its results file exists) is not run again, so an
#     interrupted sweep continues where it stopped.
# Environment overrides: PYTHON, LRS (learning rates), SEEDS, EPOCHS, BATCH.

set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ -z "${PYTHON:-}" ]]; then
  if [[ -x "$REPO/.venv/bin/python" ]]; then PYTHON="$REPO/.venv/bin/python"; else PYTHON=python3; fi
fi
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-3}"

SMOKE=0
ARGS=()
for arg in "$@"; do
  case "$arg" in
    --smoke) SMOKE=1 ;;
    -h|--help) sed -n '2,/^$/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "$(basename "$0"): error: $arg: no such option (the one option is --smoke;" \
          "--help shows the usage)" >&2; exit 2 ;;
    *) ARGS+=("$arg") ;;
  esac
done

die() { echo "$(basename "$0"): error: $*" >&2; exit 2; }

need_dir() {  # need_dir PATH WHAT
  [[ -d "$1" ]] || die "$2 folder '$1' does not exist"
  if [[ "$2" == BERT ]]; then
    [[ -f "$1/bert_config.json" ]] || die "$1 has no bert_config.json (the BERT folder holds bert_config.json, vocab.txt, bert_model.ckpt.*)"
    [[ -f "$1/vocab.txt" ]] || die "$1 has no vocab.txt"
  fi
}

# The BERT folder as Google releases it: bert_config.json, vocab.txt, bert_model.ckpt.*
# (or model.safetensors). Prints the model flags for the run_* scripts.
model_flags() {  # model_flags BERT_DIR
  local dir="$1"
  [[ -f "$dir/bert_config.json" ]] || die "$dir has no bert_config.json"
  [[ -f "$dir/vocab.txt" ]] || die "$dir has no vocab.txt"
  printf -- '--bert_config_file=%s\n--vocab_file=%s\n' "$dir/bert_config.json" "$dir/vocab.txt"
  if [[ -f "$dir/bert_model.ckpt.index" ]]; then
    printf -- '--init_checkpoint=%s\n' "$dir/bert_model.ckpt"
  elif [[ -f "$dir/model.safetensors" ]]; then
    printf -- '--init_checkpoint=%s\n' "$dir/model.safetensors"
  else
    echo "warning: $dir has no checkpoint; the encoder starts from random weights" >&2
  fi
  # Cased models are named so by Google (cased_L-12_H-768_A-12); everything else is uncased.
  if [[ "$(basename "$dir")" == cased* || "$(basename "$dir")" == *_cased* ]]; then
    echo "--do_lower_case=false"
  fi
}

# Whether a script has a flag (some ablations need --ltr in every fine-tuning script).
has_flag() {  # has_flag SCRIPT FLAG: asks the script itself (its --helpfull lists every
  # flag it accepts, wherever it is defined: flags_common defines most of them).
  # (its output, not its status, says it ran.)
  local help
  help="$("$PYTHON" "$REPO/$1" --helpfull 2>&1 || true)"
  grep -qE "^\s+--\[no\]helpfull:" <<<"$help" || die "$1 --helpfull did not list flags: ${help: -300}"
  grep -qE "^\s+--(\[no\])?$2(:|\s|$)" <<<"$help"
}

# run_once RESULT_FILE LOG -- COMMAND...: runs COMMAND unless RESULT_FILE exists.
run_once() {
  local result="$1" log="$2"
  shift 3
  if [[ -f "$result" ]]; then
    echo "  done already: $result"
    return 0
  fi
  mkdir -p "$(dirname "$log")"
  echo "  running: $*" | cut -c1-300
  local start=$SECONDS
  if ! "$@" > "$log" 2>&1; then
    echo "  FAILED (see $log):" >&2
    tail -n 5 "$log" >&2
    return 1
  fi
  echo "  finished in $((SECONDS - start)) s"
}

# record ROW COLUMN LR SEED SELECT DEV_FILE DEV_KEY [TEST_FILE TEST_KEY]
#   SELECT: best (best lr and seed on dev, as the paper did for Table 1) or mean (mean over
#   seeds, best lr on dev, as the paper did where it reports averages).
record() {
  local row="$1" column="$2" lr="$3" seed="$4" select="$5" dev_file="$6" dev_key="$7"
  local test_file="${8:-}" test_key="${9:-}"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$TABLE" "$row" "$column" "$lr" "$seed" \
    "$select" "$dev_file" "$dev_key" "$test_file" "$test_key" >> "$OUT/runs.tsv"
}

# smoke_head SRC DST N: the header-free first N lines (plus header if HEADER=1).
smoke_head() {
  mkdir -p "$(dirname "$2")"
  head -n "$3" "$1" > "$2"
}

setup_out() {  # setup_out DEFAULT_NAME [GIVEN]
  OUT="${2:-$REPO/out/reproduce/$1}"
  mkdir -p "$OUT"
  OUT="$(cd "$OUT" && pwd)"
  : > "$OUT/runs.tsv.new"
  # runs.tsv lists this invocation's runs only (results of older runs stay on disk).
  mv "$OUT/runs.tsv.new" "$OUT/runs.tsv"
  echo "$(basename "$0"): results in $OUT (aggregate: $PYTHON $REPO/reproduce/aggregate.py $OUT)"
}

# ---------------------------------------------------------------- pretraining (Tables 5, 6, 8)
# Paper: batch 256, 1M steps, lr 1e-4, 10k warmup, seq 128 (then 10% of the steps at 512,
# which these scripts leave out). Override with PRETRAIN_STEPS, PRETRAIN_BATCH, PRETRAIN_LR,
# PRETRAIN_WARMUP, PRETRAIN_SEQ, MAX_PRED, DUPE.
pretrain_settings() {
  PRETRAIN_STEPS="${PRETRAIN_STEPS:-1000000}"; PRETRAIN_BATCH="${PRETRAIN_BATCH:-256}"
  PRETRAIN_LR="${PRETRAIN_LR:-1e-4}"; PRETRAIN_WARMUP="${PRETRAIN_WARMUP:-10000}"
  PRETRAIN_SEQ="${PRETRAIN_SEQ:-128}"; MAX_PRED="${MAX_PRED:-20}"; DUPE="${DUPE:-10}"
  if (( SMOKE )); then
    PRETRAIN_STEPS=3; PRETRAIN_BATCH=8; PRETRAIN_WARMUP=1; PRETRAIN_SEQ=32; MAX_PRED=5; DUPE=1
  fi
}

# split_corpus CORPUS: every 20th document (blank-line separated) goes to a held-out file,
# for the masked-LM perplexity of Table 6. Sets TRAIN_CORPUS and HELDOUT_CORPUS.
split_corpus() {
  [[ -f "$1" ]] || die "corpus '$1' does not exist"
  TRAIN_CORPUS="$OUT/corpus/train.txt"; HELDOUT_CORPUS="$OUT/corpus/heldout.txt"
  mkdir -p "$OUT/corpus"
  awk -v train="$TRAIN_CORPUS" -v held="$HELDOUT_CORPUS" \
    'BEGIN { RS = ""; ORS = "\n\n" } NR % 20 == 0 { print > held; next } { print > train }' "$1"
  [[ -s "$HELDOUT_CORPUS" ]] || cp "$TRAIN_CORPUS" "$HELDOUT_CORPUS"
}

# make_config BASE_CONFIG OUT_JSON [L H A]: the base config, resized (intermediate = 4H) and,
# in smoke mode, shrunk to hidden 32.
make_config() {
  "$PYTHON" - "$@" "$SMOKE" <<'PY'
import json, sys
base, out = sys.argv[1], sys.argv[2]
sizes, smoke = sys.argv[3:-1], sys.argv[-1] == "1"
config = json.load(open(base, encoding="utf-8"))
if sizes:
  layers, hidden, heads = (int(x) for x in sizes)
  config.update(num_hidden_layers=layers, hidden_size=hidden, num_attention_heads=heads,
                intermediate_size=4 * hidden)
if smoke and not sizes:
  config.update(num_hidden_layers=2, hidden_size=32, num_attention_heads=4,
                intermediate_size=37)
if smoke:
  config["max_position_embeddings"] = min(config.get("max_position_embeddings", 512), 128)
json.dump(config, open(out, "w", encoding="utf-8"), indent=2, sort_keys=True)
PY
}

# pretraining_data NAME CORPUS [create_pretraining_data flags...]: prints the TFRecord path.
pretraining_data() {
  local name="$1" corpus="$2"; shift 2
  local record="$OUT/data/$name.tfrecord"
  run_once "$record" "$OUT/data/$name.log" -- "$PYTHON" "$REPO/create_pretraining_data.py" \
    --input_file="$corpus" --output_file="$record" --vocab_file="$VOCAB" \
    --do_lower_case="$LOWER" --max_seq_length="$PRETRAIN_SEQ" \
    --max_predictions_per_seq="$MAX_PRED" --dupe_factor="$DUPE" "$@" >&2
  echo "$record"
}

# pretrain NAME CONFIG RECORD [run_pretraining flags...]: trains from scratch; the model
# folder (Google layout + vocab.txt) is $OUT/pretrain/NAME/pretrained.
pretrain() {
  local name="$1" config="$2" record="$3"; shift 3
  local dir="$OUT/pretrain/$name"
  run_once "$dir/pretrained/bert_model.ckpt.index" "$dir.log" -- \
    "$PYTHON" "$REPO/run_pretraining.py" --input_file="$record" --bert_config_file="$config" \
    --do_train --train_batch_size="$PRETRAIN_BATCH" --max_seq_length="$PRETRAIN_SEQ" \
    --max_predictions_per_seq="$MAX_PRED" --num_train_steps="$PRETRAIN_STEPS" \
    --num_warmup_steps="$PRETRAIN_WARMUP" --learning_rate="$PRETRAIN_LR" \
    --output_dir="$dir" "$@"
  cp "$VOCAB" "$dir/pretrained/vocab.txt"
  [[ -f "$dir/pretrained/bert_config.json" ]] || cp "$config" "$dir/pretrained/bert_config.json"
}

# vocab_settings BERT_DIR: the vocabulary (and case) every pretrained variant uses.
vocab_settings() {
  VOCAB="$1/vocab.txt"; LOWER=true
  [[ -f "$VOCAB" ]] || die "$1 has no vocab.txt"
  if [[ "$(basename "$1")" == cased* || "$(basename "$1")" == *_cased* ]]; then LOWER=false; fi
}

# ---------------------------------------------------------------- fine-tuning helpers
# finetune_glue ROW COLUMN TASK_DIR_NAME MODEL_DIR [extra run_classifier flags...]
# Sweeps LRS x SEEDS on one GLUE task; records dev accuracy (select=$SELECT).
declare -A GLUE_NAME=([MNLI]=mnli [QQP]=qqp [QNLI]=qnli [SST-2]=sst2 [CoLA]=cola [STS-B]=stsb
                      [MRPC]=mrpc [RTE]=rte)
finetune_glue() {
  local row="$1" column="$2" task="$3" model_dir="$4"; shift 4
  local data="$GLUE_DIR/$task"
  if [[ ! -d "$data" ]]; then echo "skipping $task: no $data"; return 0; fi
  if (( SMOKE )); then
    local small="$OUT/smoke_data/$task"
    for f in "$data"/*.tsv; do [[ -f "$small/$(basename "$f")" ]] || smoke_head "$f" "$small/$(basename "$f")" 25; done
    data="$small"
  fi
  local model; mapfile -t model < <(model_flags "$model_dir")
  local lr seed dir slug="${row//[^A-Za-z0-9]/_}"
  for lr in $LRS; do
    for seed in $SEEDS; do
      dir="$OUT/finetune/$slug/$task/lr${lr}_seed${seed}"
      run_once "$dir/eval_results.txt" "$dir.log" -- "$PYTHON" "$REPO/run_classifier.py" \
        --task_name="${GLUE_NAME[$task]}" --data_dir="$data" "${model[@]}" --do_train \
        --do_eval --max_seq_length="$SEQ" --train_batch_size="$BATCH" --learning_rate="$lr" \
        --num_train_epochs="$EPOCHS" --seed="$seed" --output_dir="$dir" "$@" || continue
      record "$row" "$column" "$lr" "$seed" "$SELECT" "$dir/eval_results.txt" eval_accuracy
    done
  done
}

# finetune_ner ROW COLUMN MODEL_DIR [extra run_ner flags...]: dev F1 (and test F1).
finetune_ner() {
  local row="$1" column="$2" model_dir="$3"; shift 3
  local model; mapfile -t model < <(model_flags "$model_dir")
  local lr seed dir slug="${row//[^A-Za-z0-9]/_}_${column//[^A-Za-z0-9]/_}"
  local lrs="${NER_LRS:-$LRS}"
  # The feature-based mode's BiLSTM has a learning rate of its own (run_ner.py refuses
  # --feature_learning_rate without --mode=feature, and ignores --learning_rate with it).
  local rate_flag=--learning_rate
  [[ " $* " == *" --mode=feature "* ]] && rate_flag=--feature_learning_rate
  for lr in $lrs; do
    for seed in $SEEDS; do
      dir="$OUT/ner/$slug/lr${lr}_seed${seed}"
      run_once "$dir/test_results.txt" "$dir.log" -- "$PYTHON" "$REPO/run_ner.py" \
        --data_dir="$CONLL_DATA" "${model[@]}" --do_train --do_eval --do_predict \
        --max_seq_length="$SEQ" --train_batch_size="$BATCH" "$rate_flag=$lr" \
        --num_train_epochs="$EPOCHS" --seed="$seed" \
        --output_dir="$dir" "$@" || continue
      record "$row" "$column" "$lr" "$seed" "$SELECT" "$dir/eval_results.txt" eval_f1 \
        "$dir/test_results.txt" test_f1
    done
  done
}

# smoke_conll CONLL_DIR: the first 30 sentences of each file (for --smoke); sets CONLL_DATA.
smoke_conll() {
  CONLL_DATA="$1"
  if (( SMOKE )); then
    CONLL_DATA="$OUT/smoke_data/conll"
    mkdir -p "$CONLL_DATA"
    local f
    for f in "$1"/*.txt "$1"/eng.*; do
      [[ -f "$f" ]] || continue
      awk 'BEGIN { RS = ""; ORS = "\n\n" } NR <= 30 { print }' "$f" > "$CONLL_DATA/$(basename "$f")"
    done
  fi
}

finish() {
  echo
  "$PYTHON" "$REPO/reproduce/aggregate.py" "$OUT"
}

# step NAME RESULT_FILE -- COMMAND...: prints and runs COMMAND (output to $OUT/logs/NAME.log)
# unless RESULT_FILE exists; records its wall-clock and CPU seconds in $TIMES
# (CPU: user + system of the command and its children; on a shared machine the wall
# clock says more about the neighbours than about the step).
step() {
  local name="$1" result="$2"; shift 3
  echo
  echo "=== $name"
  printf '$'; printf ' %q' "$@"; echo
  if [[ -e "$result" ]]; then
    echo "--- done already: $result"
    return 0
  fi
  local log="$OUT/logs/$name.log" usage="$OUT/logs/$name.time"
  if ! /usr/bin/time -f "%e %U %S" -o "$usage" nice "$@" > "$log" 2>&1; then
    echo "--- FAILED (log: $log):" >&2
    tail -n 5 "$log" >&2
    exit 1
  fi
  # The corpus check's block and summaries (absl's log prefix stripped).
  sed -E 's/^[IWEF][0-9]{4} [0-9:.]+ +[0-9]+ [^ ]+:[0-9]+\] //' "$log" \
    | grep "^corpus check\|^  \|^WARNING: \|^{" | grep -v "absl::InitializeLog" | tail -n 12 || true
  local wall cpu
  read -r wall cpu < <(awk '{ printf "%.0f %.0f\n", $1, $2 + $3 }' "$usage")
  printf '%s\t%s\t%s\n' "$name" "$wall" "$cpu" >> "$TIMES"
  echo "--- $name: ${wall} s (${cpu} CPU-s)"
}
