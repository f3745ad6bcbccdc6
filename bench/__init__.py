"""Benchmarks: speed, memory and token cost, each against a baseline in the same run.

Run with ``make bench`` (``python -m bench``), never as part of ``make test``. See
:mod:`bench.__main__` for the options and where the results go.
"""
