"""Algorithm 3 (BALANCE) and its baselines: the registered solvers and two implementations.

* :mod:`~balance_opt.solvers.heuristic.solvers`: BALANCE, its literal twin and the baselines
  as registered solvers;
* :mod:`~balance_opt.solvers.heuristic.primitives`: the outcome both implementations return
  and the float expressions they share;
* :mod:`~balance_opt.solvers.heuristic.literal`: the reference, tuple by tuple as printed;
* :mod:`~balance_opt.solvers.heuristic.fast`: the default, the same answer with most tuples
  skipped by bounds;
* :mod:`~balance_opt.solvers.heuristic.blocks`: one block of Algorithm 1 or 2 for the fast
  implementation (bounds and exact search).
"""
