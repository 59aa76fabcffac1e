"""The adversary: search for instances where a heuristic is far from the optimum (docs/worst-case.md)."""
