"""balance-opt: instances, the paper's algorithms, solvers that prove optima and reports for BALANCE."""

from balance_opt.errors import InputError
from balance_opt.evaluate import AD, NONE, SD, Evaluation, Schedule, evaluate
from balance_opt.instance import Instance, LanguageModel, Server
from balance_opt.io import read_instance, read_solution, write_instance
from balance_opt.result import Result

__version__ = "0.1.0"

__all__ = [
    "AD",
    "NONE",
    "SD",
    "Evaluation",
    "InputError",
    "Instance",
    "LanguageModel",
    "Result",
    "Schedule",
    "Server",
    "__version__",
    "evaluate",
    "read_instance",
    "read_solution",
    "write_instance",
]
