"""Shared test setup: hypothesis profiles and the fixture files.

Random small instances come from :mod:`tests.strategies` (``small_instances``,
``random_schedules``, ``instances_and_schedules``, ``generated_instances``).
Hypothesis profiles are opt-in: ``HYPOTHESIS_PROFILE=ci`` (derandomized, for
reproducible CI runs) or ``HYPOTHESIS_PROFILE=thorough`` (ten times the examples).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings

from balance_opt.instance import Instance
from balance_opt.io import read_instance

FIXTURES = Path(__file__).parent / "fixtures"

settings.register_profile(
    "ci", derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.register_profile(
    "thorough",
    max_examples=1000,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
)
if os.environ.get("HYPOTHESIS_PROFILE"):
    settings.load_profile(os.environ["HYPOTHESIS_PROFILE"])


@pytest.fixture
def fixtures_dir() -> Path:
    """tests/fixtures (``valid/`` and ``invalid/``)."""
    return FIXTURES


@pytest.fixture
def tiny_instance() -> Instance:
    """The two-user instance of tests/test_model.py, whose every number is computed by hand."""
    return read_instance(FIXTURES / "valid" / "tiny-K2.json")
