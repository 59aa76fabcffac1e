"""Batch runs: instances x solver configurations -> one flat row each.

:mod:`.runner` fans tasks out (:mod:`.task`, :mod:`.pool`, :mod:`.dask_executor`) and
writes the results table (:mod:`.table`); :mod:`.configs` names solver configurations;
:mod:`.experiments` defines the paper's sweeps and :mod:`.regress` re-checks shipped sets
against their references.
"""
