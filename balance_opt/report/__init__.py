"""Reports from results tables only: statistics, figures and a README (see :func:`build_report`)."""

from balance_opt.report.build import build_report

__all__ = ["build_report"]
