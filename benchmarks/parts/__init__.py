"""What the benchmarks share: machine facts, the training run, the SST-2 model, the workers
that run in other environments and their launchers.

hugging_face_worker.py, original_worker.py, peer_worker.py and ort_setups.py also run by path in other
virtual environments that do not hold this project (.venv-hf, .venv-original); they
import nothing of `bert`.
"""
