"""Hardware constants from measurements: timings CSV -> per-model ``alpha`` and ``beta``.

:mod:`.timings` reads and checks the CSV of measured forward passes, :mod:`.fit` turns
each row into a workload with the model's own FLOP formulas and fits the constants by
non-negative least squares, :mod:`.profile_file` reads and writes the fitted profile,
:mod:`.paper_fig1a` fits a profile to the paper's Fig. 1(a) and :mod:`.torch_profile`
times random-weight models to produce such a CSV.
"""
