"""Arrival processes: workloads of users arriving at a rate (docs/online.md, "Data").

``poisson_workload`` draws exponential inter-arrival times, ``gamma_workload`` gamma ones with
mean ``1 / rate`` and a coefficient of variation (bursty for ``cv > 1``). The users come from
one static instance of the generator preset with as many users as arrivals, so lengths,
deadlines, acceptance and links follow the preset's distributions.

Same seed, same bytes on every machine. The inter-arrival times are built from the uniforms
of ``numpy.random.default_rng([seed, 0, 1])`` with ``+ - * /``, ``sqrt`` and the correctly
rounded functions of :mod:`balance_opt.crmath`; no numpy transcendental function (whose SIMD
code varies with the CPU) touches them, and the arrival times are their sequential sums. The
output-length noise uses ``default_rng([seed, 0, 2])``. Both streams differ from the users'
acceptance streams ``default_rng([seed, k])`` (numpy pads a seed list with zeros, so a third
word that is not zero keeps them apart) and from the generator's ``default_rng(seed)``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from balance_opt import crmath
from balance_opt.generator import generate
from balance_opt.instance import MAX_TOKENS, InvalidInstance
from balance_opt.online.workload import Acceptance, Workload
from balance_opt.stochastic.simulate import lognormal_lengths

ARRIVAL_STREAM = 1  # default_rng([seed, 0, ARRIVAL_STREAM]): the inter-arrival uniforms
LENGTH_STREAM = 2  # default_rng([seed, 0, LENGTH_STREAM]): the output-length noise
MAX_USERS = 10**6  # a workload's arrivals (the draws run in Python, about 50 us each)
MAX_CV = 10.0  # of the inter-arrival times and of the output lengths


def _uniforms(rng: np.random.Generator, block: int = 4096) -> Callable[[], float]:
    """One uniform of ``[0, 1)`` per call; drawing in blocks does not change the values."""
    buffer: list[float] = []

    def draw() -> float:
        if not buffer:
            buffer.extend(reversed(rng.random(block).tolist()))
        return buffer.pop()

    return draw


def _normals(uniform: Callable[[], float]) -> Iterator[float]:
    """Standard normals by Marsaglia's polar method: two per accepted pair of uniforms."""
    while True:
        u, v = 2.0 * uniform() - 1.0, 2.0 * uniform() - 1.0  # exact: uniforms are k / 2^53
        s = u * u + v * v
        if 0.0 < s < 1.0:
            f = math.sqrt(-2.0 * crmath.log(s) / s)
            yield u * f
            yield v * f


def _standard_gammas(shape: float, uniform: Callable[[], float]) -> Iterator[float]:
    """Gamma(shape, 1) variates (Marsaglia and Tsang 2000; ``shape < 1`` by their boost)."""
    boost = shape < 1.0
    d = (shape + 1.0 if boost else shape) - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    normals = _normals(uniform)
    while True:
        x = next(normals)
        v = 1.0 + c * x
        if v <= 0.0:
            continue
        v = v * v * v
        u = uniform()
        x2 = x * x
        # the squeeze first (no log); u = 0 is accepted by the exact test too (log 0 = -inf)
        if (
            u < 1.0 - 0.0331 * (x2 * x2)
            or u == 0.0
            or crmath.log(u) < 0.5 * x2 + d * (1.0 - v + crmath.log(v))
        ):
            g = d * v
            if boost:  # Gamma(a) = Gamma(a + 1) * U^(1/a)
                w = uniform()
                g = g * crmath.pow(w, 1.0 / shape) if w > 0.0 else 0.0
            yield g


def _gaps(rate_per_s: float, cv: float, seed: int) -> Iterator[float]:
    """Inter-arrival times of mean ``1 / rate`` and coefficient of variation ``cv``."""
    uniform = _uniforms(np.random.default_rng([seed, 0, ARRIVAL_STREAM]))
    if cv == 1.0:  # exponential by inversion: one log per arrival, and gamma(cv=1) == Poisson
        while True:
            yield -crmath.log1p(-uniform()) / rate_per_s
    shape = 1.0 / (cv * cv)
    for g in _standard_gammas(shape, uniform):
        yield g / (shape * rate_per_s)  # scale cv^2 / rate: mean 1 / rate


def inter_arrival_times(rate_per_s: float, cv: float, users: int, seed: int = 0) -> NDArray[np.float64]:
    """The first ``users`` inter-arrival times of the process (``cv = 1``: Poisson)."""
    _check_process(rate_per_s, cv)
    return np.fromiter(itertools.islice(_gaps(rate_per_s, cv, seed), users), dtype=np.float64, count=users)


def arrival_times(
    rate_per_s: float, cv: float, duration_s: float | None, users: int | None, seed: int = 0
) -> NDArray[np.float64]:
    """Arrival times: every arrival in ``[0, duration_s)``, or exactly ``users`` of them.

    The process starts at 0; arrival ``k`` is the sum of the first ``k`` gaps, added one by one.
    """
    _check_process(rate_per_s, cv)
    if (duration_s is None) == (users is None):
        raise ValueError("give exactly one of duration_s and users")
    times = itertools.accumulate(_gaps(rate_per_s, cv, seed))
    if users is not None:
        if not 1 <= users <= MAX_USERS:
            raise ValueError(f"users must be >= 1 and <= {MAX_USERS}, got {users!r}")
        return np.fromiter(itertools.islice(times, users), dtype=np.float64, count=users)
    assert duration_s is not None
    if not (math.isfinite(duration_s) and duration_s > 0.0):
        raise ValueError(f"duration_s must be a finite number > 0, got {duration_s!r}")
    if rate_per_s * duration_s > MAX_USERS:
        raise ValueError(f"rate_per_s * duration_s must be <= {MAX_USERS} expected arrivals")
    out = list(itertools.takewhile(lambda t: t < duration_s, itertools.islice(times, 2 * MAX_USERS)))
    if not out:
        raise ValueError(f"no arrival in [0, {duration_s!r}) s at this seed: give a longer duration_s")
    if len(out) > MAX_USERS:
        raise ValueError(f"{len(out)} arrivals in [0, {duration_s!r}) s, more than {MAX_USERS}")
    return np.array(out, dtype=np.float64)


def _check_process(rate_per_s: float, cv: float) -> None:
    if not (math.isfinite(rate_per_s) and rate_per_s > 0.0):
        raise ValueError(f"rate_per_s must be a finite number > 0, got {rate_per_s!r}")
    if not (math.isfinite(cv) and 0.0 < cv <= MAX_CV):
        raise ValueError(f"cv must be a number > 0 and <= {MAX_CV:g}, got {cv!r}")


def poisson_workload(
    preset: str,
    rate_per_s: float,
    duration_s: float | None = None,
    users: int | None = None,
    seed: int = 0,
    output_cv: float = 0.0,
    deadline_scale: float = 1.0,
    acceptance: Acceptance = "random",
    **overrides: Any,
) -> Workload:
    """Poisson arrivals at ``rate_per_s`` of users drawn from ``preset``.

    Exactly one of ``duration_s`` (every arrival in ``[0, duration_s)``) and ``users``
    (exactly that many). The realized output length is the preset's drawn length times a
    mean-one log-normal factor of CV ``output_cv`` (the prediction is the drawn length);
    ``deadline_scale`` multiplies every deadline; ``overrides`` go to the generator
    (``name`` replaces the workload's name).
    """
    spec = ArrivalSpec("poisson", rate_per_s, 1.0, duration_s, users, seed, output_cv, deadline_scale)
    return spec.workload(preset, acceptance, overrides)


def gamma_workload(
    preset: str,
    rate_per_s: float,
    cv: float,
    duration_s: float | None = None,
    users: int | None = None,
    seed: int = 0,
    output_cv: float = 0.0,
    deadline_scale: float = 1.0,
    acceptance: Acceptance = "random",
    **overrides: Any,
) -> Workload:
    """Gamma inter-arrival times of mean ``1 / rate_per_s`` and CV ``cv`` (``cv = 1``: Poisson).

    The rest as :func:`poisson_workload`; with ``cv = 1`` the arrivals are Poisson's, bit for bit.
    """
    spec = ArrivalSpec("gamma", rate_per_s, cv, duration_s, users, seed, output_cv, deadline_scale)
    return spec.workload(preset, acceptance, overrides)


def _number(x: float) -> str:
    """A number as a name shows it: ``2``, ``0.5``, ``1e06``."""
    return f"{x:g}".replace("+", "")


@dataclass(frozen=True)
class ArrivalSpec:
    """Everything but the preset that decides a workload's arrivals and lengths."""

    process: str  # "poisson" or "gamma"
    rate_per_s: float
    cv: float
    duration_s: float | None
    users: int | None
    seed: int
    output_cv: float
    deadline_scale: float

    def __post_init__(self) -> None:
        if not (isinstance(self.seed, int) and self.seed >= 0):
            raise ValueError(f"seed must be an integer >= 0, got {self.seed!r}")
        if not (math.isfinite(self.output_cv) and 0.0 <= self.output_cv <= MAX_CV):
            raise ValueError(f"output_cv must be a number >= 0 and <= {MAX_CV:g}, got {self.output_cv!r}")
        if not (math.isfinite(self.deadline_scale) and self.deadline_scale > 0.0):
            raise ValueError(f"deadline_scale must be a finite number > 0, got {self.deadline_scale!r}")

    def name(self, preset: str) -> str:
        """``<preset>-<process>-r<rate>[-cv<cv>]-(d<duration>|K<users>)[-ocv<cv>][-ds<scale>]-s<seed:04d>``."""
        parts = [preset, self.process, f"r{_number(self.rate_per_s)}"]
        parts += [f"cv{_number(self.cv)}"] if self.process == "gamma" else []
        parts += [f"d{_number(self.duration_s)}" if self.duration_s is not None else f"K{self.users}"]
        parts += [f"ocv{_number(self.output_cv)}"] if self.output_cv != 0.0 else []
        parts += [f"ds{_number(self.deadline_scale)}"] if self.deadline_scale != 1.0 else []
        return "-".join([*parts, f"s{self.seed:04d}"])

    def record(self) -> dict[str, Any]:
        """The ``arrivals`` entry of the instance's ``generator`` record."""
        out: dict[str, Any] = {"process": self.process, "rate_per_s": self.rate_per_s}
        out |= {"cv": self.cv} if self.process == "gamma" else {}
        out |= {"duration_s": self.duration_s} if self.duration_s is not None else {"users": self.users}
        out |= {"output_cv": self.output_cv, "deadline_scale": self.deadline_scale}
        out["rng"] = (
            f"numpy.random.default_rng([seed, 0, {ARRIVAL_STREAM}]) (inter-arrival uniforms), "
            f"[seed, 0, {LENGTH_STREAM}] (output-length noise)"
        )
        return out

    def workload(self, preset: str, acceptance: Acceptance, overrides: dict[str, Any]) -> Workload:
        """Arrivals first, then one generated instance of that many users."""
        arrival = arrival_times(self.rate_per_s, self.cv, self.duration_s, self.users, self.seed)
        name = overrides.pop("name", None) or self.name(preset)
        base = generate(preset, users=len(arrival), seed=self.seed, name=name, **overrides)
        predicted = base.output_tokens
        noise = np.random.default_rng([self.seed, 0, LENGTH_STREAM])
        # a factor of CV <= 10 stays far below int64's range; the cap keeps the value rules
        realized = np.minimum(lognormal_lengths(predicted, self.output_cv, 1, noise)[0], MAX_TOKENS)
        try:
            inst = base.replace(
                output_tokens=np.array(realized, dtype=np.int64),
                deadline_s=base.deadline_s * self.deadline_scale,  # one IEEE product per user
                generator={**(base.generator or {}), "arrivals": self.record()},
            )
        except InvalidInstance as exc:
            raise ValueError(f"deadline_scale={self.deadline_scale!r} breaks a value rule: {exc}") from None
        return Workload(inst, arrival, predicted, acceptance_seed=self.seed, acceptance=acceptance)
