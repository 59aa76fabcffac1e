"""Online operation: users arrive over time and a policy schedules them as they come (docs/online.md)."""

from balance_opt.online.arrivals import gamma_workload, poisson_workload
from balance_opt.online.hindsight import HindsightBound, hindsight_bound
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
from balance_opt.online.trace import read_trace, write_trace
from balance_opt.online.workload import Workload

__all__ = ["OnlineRun", "PolicyError", "Workload", "simulate", "summary", "timeline", "user_table"]
__all__ += ["gamma_workload", "poisson_workload", "read_trace", "write_trace"]
__all__ += ["GreedyAdmission", "Lanes", "Policy", "SolverPolicy", "View"]
__all__ += ["make_policy", "policy_names", "register_policy", "unregister_policy"]
__all__ += ["HindsightBound", "hindsight_bound"]
