"""Online operation: users arrive over time and a policy schedules them as they come (docs/online.md)."""

from balance_opt.online.metrics import summary, timeline, user_table
from balance_opt.online.policies import (
    GreedyAdmission,
    SolverPolicy,
    make_policy,
    policy_names,
    register_policy,
    unregister_policy,
)
from balance_opt.online.policy import Lanes, Policy, View
from balance_opt.online.server import OnlineRun, PolicyError, simulate
from balance_opt.online.workload import Workload

__all__ = ["OnlineRun", "PolicyError", "Workload", "simulate", "summary", "timeline", "user_table"]
__all__ += ["GreedyAdmission", "Lanes", "Policy", "SolverPolicy", "View"]
__all__ += ["make_policy", "policy_names", "register_policy", "unregister_policy"]
