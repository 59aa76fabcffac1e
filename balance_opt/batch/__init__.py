"""Batch machinery behind :mod:`balance_opt.runner`: tasks, executors and the results table."""
