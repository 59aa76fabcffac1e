"""The same bytes on every CPU: numpy's SIMD paths must not reach a stored or compared number.

Each check runs in a child process under several ``NPY_DISABLE_CPU_FEATURES`` settings (as if
on a CPU without AVX-512, or without AVX2 and FMA3 too) and compares a digest of what it
computes: every library instance file, the CI set's files, robust SD iteration levels, a
simulation with random output lengths and workloads of the online arrival processes. On a CPU
that lacks a disabled feature the setting changes nothing and the check still holds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from balance_opt.library.found import ADVERSARY_FINDS

ROOT = Path(__file__).resolve().parent.parent


def cpu_settings() -> tuple[str, ...]:
    """Nothing disabled; no AVX-512 (a CPU without it); only numpy's baseline (no AVX2, FMA3).

    The names come from numpy's own list of dispatched features, which changes between
    versions (numpy 2.4 dispatches ``X86_V3 X86_V4 AVX512_ICL AVX512_SPR``; 1.26 named
    ``AVX2 FMA3 AVX512_SKX ...``): a name numpy does not dispatch is ignored with a warning.
    """
    from numpy._core import _multiarray_umath as umath

    dispatched = [str(f) for f in umath.__cpu_dispatch__]
    wide = [f for f in dispatched if "AVX512" in f or f == "X86_V4"]
    return ("", " ".join(wide), " ".join(dispatched))


SETTINGS = cpu_settings()

# Everything here is either stored (instance files, robust levels) or compared (simulated
# goodput, the evaluator's latencies); the parent compares the digests across settings.
CHILD = r"""
import hashlib, json, sys
from pathlib import Path
from balance_opt.generator import generate
from balance_opt.io import instance_bytes
from balance_opt.library.sets import SETS, write_set
from balance_opt.evaluator import Schedule, evaluate
from balance_opt.stochastic.distribution import batch_user_level, quantile_levels, user_distributions
from balance_opt.stochastic.simulate import simulate

out, files = {}, {}
root = Path(sys.argv[1])
for name, lib in SETS.items():
    for path in write_set(lib, root):
        files[f"{name}/{path.name}"] = hashlib.sha256(path.read_bytes()).hexdigest()
ci = [("fig4", k, 1) for k in (6, 8, 10, 12, 14, 16, 20, 24, 30)]
ci += [("fig5", k, 2) for k in (6, 10, 14, 20, 24)]
ci += [("tight-memory", k, 3) for k in (6, 10, 14, 20, 24, 30)]
for preset, k, seed in ci:
    inst = generate(preset, users=k, seed=seed)
    files[f"ci/{inst.name}.json"] = hashlib.sha256(instance_bytes(inst)).hexdigest()
inst = generate("fig5", users=12, seed=7, draft_length=4)
out["accepted_drafts"] = inst.accepted_drafts.tolist()
out["distributions"] = [p.tolist() for p in user_distributions(inst)[:3]]
out["levels"] = quantile_levels(inst, 0.95).tolist()
out["batch_level"] = batch_user_level(0.95, 7)
modes = {u: ("sd" if i % 2 else "ad") for i, u in enumerate(inst.user_ids)}
schedule = Schedule.from_assignment(inst, 0.5, modes)
out["latencies"] = [evaluate(inst, schedule).t_ad, evaluate(inst, schedule).t_sd]
trials = simulate(inst, schedule, 200, 3, output_cv=0.4)
out["goodput"] = trials.goodput.tolist()
out["completion"] = hashlib.sha256(trials.completion_s.tobytes()).hexdigest()
from balance_opt.online.arrivals import gamma_workload, poisson_workload
for seed in (0, 1, 2):
    for w in (
        poisson_workload("fig4", 2.0, users=30, seed=seed, output_cv=0.5),
        gamma_workload("fig5", 1.0, 2.5, duration_s=30.0, seed=seed, output_cv=0.3),
        gamma_workload("fig4", 3.0, 0.5, users=30, seed=seed),
    ):
        parts = (w.arrival_s, w.instance.output_tokens, w.predicted_output_tokens, w.instance.deadline_s)
        out[f"online/{w.instance.name}"] = hashlib.sha256(b"".join(a.tobytes() for a in parts)).hexdigest()
# online runs: who is served when, under a solver policy and a baseline, and their summaries
from balance_opt.online import simulate as run_online, summary as online_summary
w = poisson_workload("fig4", 3.0, duration_s=40.0, seed=4, output_cv=0.4)
for policy in ("balance", "fcfs-cheaper"):
    run = run_online(w, policy, epochs="window", window_s=1.0)
    parts = (run.outcome, run.mode, run.start_s, run.completion_s)
    out[f"online-run/{policy}"] = hashlib.sha256(b"".join(a.tobytes() for a in parts)).hexdigest()
    out[f"online-summary/{policy}"] = online_summary(run)
print(json.dumps({"files": files, "values": out}))
"""


def run_child(setting: str, tmp: Path) -> dict[str, dict[str, object]]:
    env = {**os.environ, "NPY_DISABLE_CPU_FEATURES": setting}
    if not setting:
        env.pop("NPY_DISABLE_CPU_FEATURES")
    cmd = [sys.executable, "-c", CHILD, str(tmp)]
    proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    doc: dict[str, dict[str, object]] = json.loads(proc.stdout)
    return doc


def shipped(name: str) -> Path:
    folder, _, stem = name.partition("/")
    return ROOT / "instances" / ("ci" if folder == "ci" else f"paper/{folder}") / stem


def test_every_cpu_feature_setting_writes_the_shipped_bytes(tmp_path: Path) -> None:
    import hashlib

    digests = [run_child(s, tmp_path / f"s{i}") for i, s in enumerate(SETTINGS)]
    first = digests[0]
    lib = ROOT / "instances"
    found = {f"{f.stem}.json" for f in ADVERSARY_FINDS}  # kept as a search wrote them, not generated
    generated = [p for p in (lib / "paper").glob("*/*.json") if p.name not in found]
    assert len(first["files"]) == len([*(lib / "ci").glob("*.json"), *generated])
    for setting, doc in zip(SETTINGS[1:], digests[1:], strict=True):
        where = f"with NPY_DISABLE_CPU_FEATURES={setting!r}"
        assert doc["files"] == first["files"], f"instance bytes differ {where}"
        assert doc["values"] == first["values"], f"computed values differ {where}"
    digest = {n: hashlib.sha256(shipped(n).read_bytes()).hexdigest() for n in first["files"]}
    changed = [n for n, h in first["files"].items() if digest[n] != h]
    assert changed == [], f"generated files differ from the shipped ones: {changed[:5]}"


@pytest.mark.parametrize("setting", SETTINGS[1:])
def test_numpy_accepts_the_settings(setting: str) -> None:
    """A setting numpy ignores would make the check above vacuous: it must import without a warning."""
    env = {**os.environ, "NPY_DISABLE_CPU_FEATURES": setting}
    proc = subprocess.run(
        [sys.executable, "-W", "error", "-c", "import numpy; numpy.log10(numpy.arange(1.0, 9.0))"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
