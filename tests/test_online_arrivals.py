"""Arrival processes and trace files of the online model (docs/online.md, docs/formats.md)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from balance_opt.errors import InputError
from balance_opt.generator import generate
from balance_opt.instance import MAX_TOKENS, USER_ARRAY_FIELDS, YEAR_S
from balance_opt.io import instance_bytes
from balance_opt.online import gamma_workload, poisson_workload, read_trace, write_trace
from balance_opt.online.arrivals import arrival_times, inter_arrival_times
from balance_opt.online.trace import trace_text
from balance_opt.online.workload import Workload

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "trace-poisson-fig4.csv"


def workload_bytes(w: Workload) -> bytes:
    return b"".join([instance_bytes(w.instance), w.arrival_s.tobytes(), w.predicted_output_tokens.tobytes()])


# --- the processes ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cv", "mean_tol", "cv_tol"), [(1.0, 0.03, 0.03), (0.5, 0.02, 0.04), (2.0, 0.05, 0.08)]
)
def test_mean_and_cv_of_a_long_draw(cv: float, mean_tol: float, cv_tol: float) -> None:
    # 20000 gaps: the standard error of the mean is cv / sqrt(20000) < 1.5% of it, and of the
    # sample CV at most about 2% (cv = 2: shape 1/4, excess kurtosis 24)
    gaps = inter_arrival_times(5.0, cv, 20000, seed=11)
    assert (gaps >= 0.0).all()
    assert gaps.mean() == pytest.approx(0.2, rel=mean_tol)
    assert gaps.std() / gaps.mean() == pytest.approx(cv, rel=cv_tol)
    # the whole law, against numpy's gamma sampler (a reference here, not bit-stable): the
    # two-sample Kolmogorov-Smirnov distance stays below its 0.1% critical value
    shape = 1.0 / cv**2
    reference = np.random.default_rng(0).gamma(shape, 0.2 / shape, 20000)
    assert ks_distance(gaps, reference) < 1.95 * math.sqrt(2 / 20000)


def ks_distance(a: np.ndarray, b: np.ndarray) -> float:
    """The largest gap between the two samples' empirical distribution functions."""
    grid = np.sort(np.concatenate([a, b]))
    fa = np.searchsorted(np.sort(a), grid, side="right") / len(a)
    fb = np.searchsorted(np.sort(b), grid, side="right") / len(b)
    return float(np.abs(fa - fb).max())


def test_poisson_counts_per_window_are_poisson() -> None:
    # counts in unit windows: mean = variance = rate for a Poisson process, not for a bursty one
    def counts(cv: float) -> np.ndarray:
        t = arrival_times(4.0, cv, 2000.0, None, seed=5)
        return np.bincount(np.floor(t).astype(int), minlength=2000)

    poisson, bursty = counts(1.0), counts(3.0)
    assert poisson.mean() == pytest.approx(4.0, rel=0.05)
    assert poisson.var() / poisson.mean() == pytest.approx(1.0, abs=0.12)
    assert bursty.var() / bursty.mean() > 3.0


def test_the_draws_are_pinned() -> None:
    # fixed bits: a change of stream, algorithm or summation order shows here first
    assert [x.hex() for x in arrival_times(1.0, 1.0, None, 3, 0).tolist()] == [
        "0x1.31626ae853a8cp-1",
        "0x1.17ab6af07f79ap+0",
        "0x1.f3e8a60b7d750p+0",
    ]
    assert [x.hex() for x in arrival_times(1.0, 2.0, None, 3, 0).tolist()] == [
        "0x1.cd3eb2303dbccp-8",
        "0x1.d154dde696373p-8",
        "0x1.32ffebf49a0c9p+3",
    ]


def test_arrivals_are_sequential_sums_of_the_gaps() -> None:
    gaps = inter_arrival_times(3.0, 0.7, 500, seed=2).tolist()
    total, expected = 0.0, []
    for g in gaps:
        total += g
        expected.append(total)
    assert arrival_times(3.0, 0.7, None, 500, seed=2).tolist() == expected


def test_same_seed_same_bytes_other_seed_other_bytes() -> None:
    def make(seed: int) -> Workload:
        return gamma_workload("fig4", 2.0, 1.5, duration_s=15.0, seed=seed, output_cv=0.4, deadline_scale=1.5)

    assert workload_bytes(make(4)) == workload_bytes(make(4))
    a, b = make(4), make(5)
    assert workload_bytes(a) != workload_bytes(b)
    assert not np.array_equal(a.arrival_s[:5], b.arrival_s[:5])


def test_gamma_with_cv_one_is_poisson_bit_for_bit() -> None:
    p = poisson_workload("fig5", 1.5, users=30, seed=9, output_cv=0.2)
    g = gamma_workload("fig5", 1.5, 1.0, users=30, seed=9, output_cv=0.2)
    assert p.arrival_s.tobytes() == g.arrival_s.tobytes()
    assert np.array_equal(p.instance.output_tokens, g.instance.output_tokens)


def test_duration_and_users_modes() -> None:
    w = poisson_workload("fig4", 3.0, duration_s=10.0, seed=6)
    k = w.num_users
    assert 10 < k < 60
    assert w.arrival_s[-1] < 10.0
    # the duration keeps exactly the arrivals before it: the next one is at or after it
    assert arrival_times(3.0, 1.0, None, k + 1, seed=6)[-1] >= 10.0
    assert np.array_equal(arrival_times(3.0, 1.0, None, k, seed=6), w.arrival_s)
    assert poisson_workload("fig4", 3.0, users=17, seed=6).num_users == 17
    for both_or_neither in ({"duration_s": 5.0, "users": 3}, {}):
        with pytest.raises(ValueError, match="exactly one of duration_s and users"):
            poisson_workload("fig4", 3.0, seed=6, **both_or_neither)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no arrival"):
        poisson_workload("fig4", 1e-9, duration_s=1.0)


def test_users_come_from_the_preset_and_output_cv_zero_predicts_exactly() -> None:
    w = poisson_workload("fig5", 2.0, users=25, seed=8)
    base = generate("fig5", users=25, seed=8)
    assert np.array_equal(w.predicted_output_tokens, w.instance.output_tokens)
    for name, _ in USER_ARRAY_FIELDS:
        assert np.array_equal(getattr(w.instance, name), getattr(base, name)), name
    assert (w.acceptance_seed, w.acceptance) == (8, "random")
    assert w.instance.name == "fig5-poisson-r2-K25-s0008"
    assert w.instance.generator is not None
    assert w.instance.generator["arrivals"]["process"] == "poisson"


def test_noisy_lengths_are_unbiased_and_deadlines_scale() -> None:
    w = poisson_workload("fig4", 50.0, users=2000, seed=3, output_cv=0.5, deadline_scale=2.5)
    base = generate("fig4", users=2000, seed=3)
    assert np.array_equal(w.predicted_output_tokens, base.output_tokens)
    realized, predicted = w.instance.output_tokens, w.predicted_output_tokens
    assert (realized != predicted).mean() > 0.9
    assert realized.min() >= 1
    assert realized.sum() / predicted.sum() == pytest.approx(1.0, abs=0.03)
    assert np.array_equal(w.instance.deadline_s, base.deadline_s * 2.5)
    assert w.instance.name == "fig4-poisson-r50-K2000-ocv0.5-ds2.5-s0003"


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match=r"deadline_scale=1e\+20 breaks a value rule: .*deadline_s"):
        poisson_workload("fig4", 1.0, users=3, deadline_scale=1e20)
    for kwargs, words in [
        ({"rate_per_s": 0.0}, "rate_per_s must be"),
        ({"rate_per_s": math.inf}, "rate_per_s must be"),
        ({"output_cv": -0.1}, "output_cv must be"),
        ({"deadline_scale": math.nan}, "deadline_scale must be"),
        ({"seed": -1}, "seed must be"),
    ]:
        with pytest.raises(ValueError, match=words):
            poisson_workload("fig4", **{"rate_per_s": 1.0, "users": 3, **kwargs})
    with pytest.raises(ValueError, match="cv must be"):
        gamma_workload("fig4", 1.0, 0.0, users=3)


# --- trace files -----------------------------------------------------------------------


def assert_same_users(a: Workload, b: Workload) -> None:
    for name, _ in USER_ARRAY_FIELDS:
        x, y = getattr(a.instance, name), getattr(b.instance, name)
        assert x.tobytes() == y.tobytes(), name
    assert a.instance.user_ids == b.instance.user_ids
    assert a.arrival_s.tobytes() == b.arrival_s.tobytes()
    assert a.predicted_output_tokens.tobytes() == b.predicted_output_tokens.tobytes()
    assert (a.acceptance_seed, a.acceptance) == (b.acceptance_seed, b.acceptance)
    for part in ("server", "llm", "slm"):
        assert getattr(a.instance, part) == getattr(b.instance, part), part


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    users=st.integers(1, 12),
    cv=st.sampled_from([0.3, 1.0, 2.5]),
    output_cv=st.sampled_from([0.0, 0.6]),
    preset=st.sampled_from(["fig4", "fig5", "tight-memory"]),
)
def test_trace_round_trip_of_generated_workloads(
    tmp_path_factory: pytest.TempPathFactory, seed: int, users: int, cv: float, output_cv: float, preset: str
) -> None:
    w = gamma_workload(preset, 2.0, cv, users=users, seed=seed, output_cv=output_cv, acceptance="expected")
    path = write_trace(w, tmp_path_factory.mktemp("t") / "w.csv")
    back = read_trace(path, preset=preset, seed=seed, acceptance="expected")
    assert_same_users(w, back)
    assert back.instance.name == "w"
    assert trace_text(back) == path.read_text()


floats = {
    "deadline_s": st.floats(1e-9, YEAR_S),
    "acceptance": st.floats(1e-9, 1 - 1e-9),
    "uplink_bandwidth_hz": st.floats(1.0, 1e12),
    "uplink_spectral_efficiency": st.floats(1e-6, 1e3),
    "downlink_bandwidth_hz": st.floats(1.0, 1e12),
    "downlink_spectral_efficiency": st.floats(1e-6, 1e3),
}


@st.composite
def arbitrary_workloads(draw: st.DrawFn) -> Workload:
    """Any values the rules allow: awkward floats, ids with commas, quotes and line breaks."""
    k = draw(st.integers(1, 6))
    text = st.text(st.characters(exclude_categories=["Cs"]), min_size=1)  # any UTF-8 text
    ids = draw(st.lists(text, min_size=k, max_size=k, unique=True))
    tokens = st.lists(st.integers(1, MAX_TOKENS), min_size=k, max_size=k)
    changes = {name: np.array(draw(st.lists(s, min_size=k, max_size=k))) for name, s in floats.items()}
    inst = generate("fig4", users=k, seed=0).replace(
        user_ids=tuple(ids), input_tokens=draw(tokens), output_tokens=draw(tokens), distance_m=None, **changes
    )
    arrival = sorted(draw(st.lists(st.floats(0.0, 10 * YEAR_S), min_size=k, max_size=k)))
    return Workload(inst, np.array(arrival), np.array(draw(tokens)), acceptance_seed=0)


@settings(max_examples=40, deadline=None)
@given(arbitrary_workloads())
def test_trace_round_trip_of_any_values(tmp_path_factory: pytest.TempPathFactory, w: Workload) -> None:
    back = read_trace(write_trace(w, tmp_path_factory.mktemp("t") / "any.csv"))
    assert_same_users(w, back)


def test_write_trace_refuses_an_empty_user_id(tmp_path: Path) -> None:
    w = poisson_workload("fig4", 1.0, users=2)
    w = Workload(w.instance.replace(user_ids=("u0", "")), w.arrival_s, w.predicted_output_tokens)
    with pytest.raises(ValueError, match="user 1 has an empty id"):
        write_trace(w, tmp_path / "x.csv")
    assert not (tmp_path / "x.csv").exists()


def test_missing_columns_come_from_the_preset(tmp_path: Path) -> None:
    path = tmp_path / "short.csv"
    path.write_text("arrival_s,input_tokens,output_tokens,deadline_scale\n0,10,20,2\n0.5,11,21,0.5\n")
    w = read_trace(path, preset="fig5", seed=4)
    base = generate("fig5", users=2, seed=4)
    assert w.instance.input_tokens.tolist() == [10, 11]
    assert w.instance.output_tokens.tolist() == w.predicted_output_tokens.tolist() == [20, 21]
    assert w.instance.deadline_s.tolist() == [base.deadline_s[0] * 2, base.deadline_s[1] * 0.5]
    for name in ("acceptance", "uplink_spectral_efficiency", "downlink_bandwidth_hz"):
        assert np.array_equal(getattr(w.instance, name), getattr(base, name)), name
    assert w.instance.user_ids == ("u0", "u1")
    assert w.instance.distance_m == base.distance_m
    assert (w.acceptance_seed, w.arrival_s.tolist()) == (4, [0.0, 0.5])


def test_the_shipped_example_is_what_the_documented_call_writes(tmp_path: Path) -> None:
    # docs/formats.md, "Trace files (online)": the call that made the example
    w = poisson_workload("fig4", 2.0, users=40, seed=1, output_cv=0.3)
    assert EXAMPLE.read_text() == trace_text(w)
    assert_same_users(read_trace(EXAMPLE, preset="fig4", seed=1), w)


HEADER = "user_id,arrival_s,input_tokens,output_tokens,deadline_s"
GOOD = "a,0.5,10,20,2.0"

# (case, file text, where the message points, what it says)
BAD: list[tuple[str, str, str, str]] = [
    (
        "negative time",
        f"{HEADER}\n{GOOD}\nb,-1,10,20,2\n",
        "data row 2, column arrival_s",
        "finite number >= 0",
    ),
    ("nan time", f"{HEADER}\nb,nan,10,20,2\n", "data row 1, column arrival_s", "must be a finite number"),
    (
        "inf deadline",
        f"{HEADER}\nb,1,10,20,inf\n",
        "data row 1, column deadline_s",
        "must be a finite number",
    ),
    (
        "unsorted",
        f"{HEADER}\nb,2.0,10,20,2\nc,1.5,10,20,2\n",
        "data row 2, column arrival_s",
        "non-decreasing, got 1.5 after 2.0",
    ),
    (
        "missing column",
        "user_id,arrival_s,output_tokens,deadline_s\na,0,20,2\n",
        "header, column input_tokens",
        "is required but missing",
    ),
    (
        "unknown column",
        f"{HEADER},colour\n{GOOD},red\n",
        "header, column 'colour'",
        "unknown column; known: user_id,",
    ),
    ("repeated column", f"{HEADER},arrival_s\n{GOOD},1\n", "header, column arrival_s", "appears twice"),
    (
        "no deadline",
        "arrival_s,input_tokens,output_tokens\n0,1,1\n",
        "header, column deadline_s",
        "exactly one of the columns deadline_s and deadline_scale",
    ),
    (
        "two deadlines",
        "arrival_s,input_tokens,output_tokens,deadline_s,deadline_scale\n0,1,1,1,1\n",
        "header, column deadline_s",
        "exactly one",
    ),
    (
        "non-numeric",
        f"{HEADER}\n{GOOD}\nb,soon,10,20,2\n",
        "data row 2, column arrival_s",
        "must be a number >= 0 and <= 3.1536e+08 s, got 'soon'",
    ),
    (
        "non-integer tokens",
        f"{HEADER}\nb,1,12.5,20,2\n",
        "data row 1, column input_tokens",
        "must be an integer >= 1 and <= 1e+07 (digits only), got '12.5'",
    ),
    ("zero tokens", f"{HEADER}\nb,1,10,0,2\n", "data row 1, column output_tokens", "must be an integer >= 1"),
    ("too many tokens", f"{HEADER}\nb,1,10,10000001,2\n", "data row 1, column output_tokens", "<= 1e+07"),
    (
        "bad prediction",
        "arrival_s,input_tokens,output_tokens,predicted_output_tokens,deadline_s\n0,1,1,-3,1\n",
        "data row 1, column predicted_output_tokens",
        "must be an integer >= 1",
    ),
    (
        "deadline past a year",
        f"{HEADER}\nb,1,10,20,4e7\n",
        "data row 1, column deadline_s",
        "> 0 and <= 3.1536e+07 s",
    ),
    (
        "acceptance outside (0, 1)",
        f"{HEADER},acceptance\n{GOOD},1.2\n",
        "data row 1, column acceptance",
        "with 0 < value < 1, got 1.2",
    ),
    (
        "zero bandwidth",
        f"{HEADER},uplink_bandwidth_hz\n{GOOD},0\n",
        "data row 1, column uplink_bandwidth_hz",
        ">= 1 and <= 1e+12 Hz",
    ),
    (
        "scaled deadline past a year",
        "arrival_s,input_tokens,output_tokens,deadline_scale\n0,1,1,1e9\n",
        "data row 1, column deadline_scale",
        "makes the deadline",
    ),
    (
        "non-positive scale",
        "arrival_s,input_tokens,output_tokens,deadline_scale\n0,1,1,0\n",
        "data row 1, column deadline_scale",
        "must be a finite number > 0",
    ),
    ("empty trace", f"{HEADER}\n", "", "is an empty trace: no data rows after the header"),
    ("empty file", "", "", "is empty: a trace needs a header row"),
    (
        "duplicate user ids",
        f"{HEADER}\n{GOOD}\nb,1,1,1,1\na,2,1,1,1\n",
        "data row 3, column user_id",
        "unique, 'a' is also data row 1",
    ),
    ("empty user id", f"{HEADER}\n,1,1,1,1\n", "data row 1, column user_id", "non-empty"),
    (
        "short row",
        f"{HEADER}\n{GOOD}\nb,1,1\n",
        "data row 2, column output_tokens",
        "the row has 3 cells, the header 5 columns",
    ),
]


@pytest.mark.parametrize(("text", "where", "rule"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_traces_name_file_row_column_and_rule(tmp_path: Path, text: str, where: str, rule: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(InputError) as info:
        read_trace(path)
    message = str(info.value)
    assert message.startswith(f"{path}: {where}: " if where else f"{path}: "), message
    assert rule in message, message


def test_unreadable_traces_are_input_errors(tmp_path: Path) -> None:
    for name, data, words in [
        ("latin1.csv", b"arrival_s,input_tokens\n\xe9", "is not UTF-8 text"),
        ("quote.csv", b'arrival_s,input_tokens,output_tokens,deadline_s\n"0,1,1,1\n', "is not valid CSV"),
    ]:
        (tmp_path / name).write_bytes(data)
        with pytest.raises(InputError, match=words):
            read_trace(tmp_path / name)
    with pytest.raises(InputError, match="cannot be read"):
        read_trace(tmp_path / "missing.csv")
