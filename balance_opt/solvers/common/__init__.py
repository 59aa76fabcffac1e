"""What two solver families share: the combinatorial bounds (:mod:`.bounds`), which users can
be served at all (:mod:`.eligibility`) and the HiGHS output silencer (:mod:`.output`).

It sits below the families (``milp``, ``exact``) and above the heuristics, whose
Algorithms 1 and 2 are exact for one mode and so compute the bounds' ranks.
"""
