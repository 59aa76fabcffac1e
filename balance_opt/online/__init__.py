"""Online operation: users arrive over time and a policy schedules them as they come (docs/online.md)."""

from balance_opt.online.metrics import summary, timeline, user_table
from balance_opt.online.server import OnlineRun, PolicyError, simulate
from balance_opt.online.workload import Workload

__all__ = ["OnlineRun", "PolicyError", "Workload", "simulate", "summary", "timeline", "user_table"]
