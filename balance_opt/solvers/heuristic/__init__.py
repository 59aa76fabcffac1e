"""Algorithm 3 (BALANCE) and its baselines: the registered solvers and two implementations.

* :mod:`~balance_opt.solvers.heuristic.solvers`: BALANCE, its literal twin and the baselines
  as registered solvers;
* :mod:`~balance_opt.solvers.heuristic.primitives`: the outcome both implementations return
  and the float expressions they share;
* :mod:`~balance_opt.solvers.heuristic.literal`: the reference, tuple by tuple as printed;
* :mod:`~balance_opt.solvers.heuristic.fast`: the default, the same answer with most tuples,
  blocks and pairs skipped by bounds (Algorithm 3);
* :mod:`~balance_opt.solvers.heuristic.alg1`, :mod:`~balance_opt.solvers.heuristic.alg2`:
  Algorithms 1 and 2 for the fast implementation;
* :mod:`~balance_opt.solvers.heuristic.tree` and :mod:`~balance_opt.solvers.heuristic.bounds`:
  the best-first search over ranges of blocks and its bounds;
* :mod:`~balance_opt.solvers.heuristic.blocks`: one block, searched exactly.
"""
