"""The benchmark suite (pytest-benchmark): speed and memory, measured, never asserted.

Run it by naming the files: `pytest spec_tests/benchmarks/bench_*.py` (the default
`pytest` run collects only test_*.py). README.md, "Benchmarks", has the commands.
"""
