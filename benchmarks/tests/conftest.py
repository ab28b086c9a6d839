"""The package tests' shared set-up for the benchmarks' tests: one thread per pool
and BoTorch's optimizers capped (``tests/conftest.py``)."""

from tests.conftest import fast_optimizers  # noqa: F401
