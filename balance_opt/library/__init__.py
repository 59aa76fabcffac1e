"""The benchmark library: instance sets, certified references, and the checker of outside solutions."""
