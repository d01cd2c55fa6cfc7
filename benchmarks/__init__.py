"""Benchmarks: scripts a person runs and reads (``README.md``), each run from the
repository root as ``python -m benchmarks.NAME``.  Importing the package sets up what
every one of them shares (:mod:`benchmarks._common`)."""

from benchmarks import _common  # noqa: F401  (first: the environment and the library's path)
