"""One-off studies whose findings docs/benchmarks.md records (`python -m benchmarks.studies.NAME`)."""
