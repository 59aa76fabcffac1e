"""Online operation: users arrive over time and a policy schedules them as they come (docs/online.md)."""
