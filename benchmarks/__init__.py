"""The project's benchmarks: speed and memory figures, as ratios measured in one run.

Each runs from the repository root as a module, `python -m benchmarks.bench_NAME`
(`python -m benchmarks.run_all`, which `make bench` runs, takes them all). The entry
points stand here; benchmarks/parts holds what they share and benchmarks/studies the
one-off studies whose findings docs/benchmarks_history.md records. The package `bert` never
imports anything from here.
"""
