"""Benchmark scripts: each prints a table; run with ``python -m benchmarks.<name>``."""
