"""One-off studies whose findings docs/benchmarks_history.md records (`python -m benchmarks.studies.NAME`)."""
