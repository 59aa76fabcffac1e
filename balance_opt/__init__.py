"""balance-opt: instances, the paper's algorithms, solvers that prove optima and reports for BALANCE.

The top level is the public API (docs/solvers.md). ``balance_opt.evaluate`` is the
function that judges every schedule; its module is ``balance_opt.evaluator`` (``Schedule``,
``Evaluation``, the violation rules), so no name means two things. For a solver of one's
own: ``Solver``, ``Option``, ``SolverOutput``, ``Termination``, ``Deadline``,
``TimeBudget``, ``register``.
"""

from balance_opt.clock import Deadline, TimeBudget
from balance_opt.errors import InputError
from balance_opt.evaluator import AD, NONE, SD, Evaluation, Schedule, evaluate
from balance_opt.families import generate_any as generate  # every preset and family, one entry point
from balance_opt.instance import Instance, LanguageModel, Server
from balance_opt.io import read_instance, read_solution, write_instance
from balance_opt.result import SolverOutput
from balance_opt.solution import Solution
from balance_opt.solution_checks import SolutionFile
from balance_opt.solvers import get_solver, register, solver_names
from balance_opt.solvers.base import Option, Solver
from balance_opt.status import Status, Termination

__version__ = "0.1.0"

__all__ = [
    "AD",
    "NONE",
    "SD",
    "Deadline",
    "Evaluation",
    "InputError",
    "Instance",
    "LanguageModel",
    "Option",
    "Schedule",
    "Server",
    "Solution",
    "SolutionFile",
    "Solver",
    "SolverOutput",
    "Status",
    "Termination",
    "TimeBudget",
    "__version__",
    "evaluate",
    "generate",
    "get_solver",
    "read_instance",
    "read_solution",
    "register",
    "solver_names",
    "write_instance",
]
