"""The results table: one flat row per solution file (``results.parquet`` and ``results.csv``).

The solution files under ``RUN_DIR/solutions/`` are the source of truth; the table is a
view rebuilt from them, so an interrupted batch never leaves a row without its file or
a file without its row after the next run.
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from balance_opt.batch.table_checks import check_results
from balance_opt.errors import InputError
from balance_opt.files import check_regular_file
from balance_opt.io import atomic_write
from balance_opt.solution import Solution
from balance_opt.work import WORK_COUNTERS

if TYPE_CHECKING:
    import pandas as pd

# The columns of a solution's work counters (Solution.work), where its solver gives them.
STAT_COLUMNS = (*WORK_COUNTERS, "p2_optimum")
FIRST_COLUMNS = ("instance", "instance_file", "instance_sha256", "K")
MIDDLE_COLUMNS = (
    "solver", "config", "config_hash", "options", "status", "served", "bound", "z", "lambda",
    "runtime_s", "feasible", "error",
)  # fmt: skip
LAST_COLUMNS = (*STAT_COLUMNS, "stats", "host", "version", "commit", "solution_file")


_INT64 = 2**63


def _flat(value: Any) -> Any:
    """A generator field as one table cell: a number, a text, or its JSON text. An integer
    that parquet's int64 cannot hold (an outside file's 2**64) is kept as its digits."""
    if isinstance(value, int) and not isinstance(value, bool) and not -_INT64 <= value < _INT64:
        return str(value)
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return json.dumps(value, sort_keys=True)


def solution_row(sol: Solution, solution_file: str = "") -> dict[str, Any]:
    """The flat row of one solution (as written by the batch runner), columns in table order."""
    run = sol.run
    users = None if run is None else run.users
    row: dict[str, Any] = {
        "instance": sol.instance,
        "instance_file": None if run is None else run.instance_file,
        "instance_sha256": sol.instance_sha256,
        "K": users or (len(sol.assignment) or None),
    }
    for key, value in sorted(((None if run is None else run.generator) or {}).items()):
        row[f"gen_{key}"] = _flat(value)
    row.update(
        solver=sol.solver,
        config=sol.solver if run is None else run.config,
        config_hash=None if run is None else run.config_hash,
        options=json.dumps(sol.options, sort_keys=True),
        status=str(sol.status),
        served=sol.served,
        bound=sol.bound,
        z=sol.z,
        **{"lambda": sol.lam},
        runtime_s=sol.runtime_s,
        feasible=sol.feasible,
        error=sol.error,
    )
    stats, work = sol.stats, sol.work
    row.update(
        nodes=work.nodes,
        lp_iterations=work.lp_iterations,
        deterministic_time=work.deterministic_time,
        p2_optimum=work.p2_optimum,
    )
    row.update(
        stats=json.dumps(stats, sort_keys=True, default=str) if stats else None,
        host=None if run is None else run.host,
        version=None if run is None else run.version,
        commit=None if run is None else run.commit,
        solution_file=solution_file,
    )
    return row


def frame(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Rows as a DataFrame with the fixed column order (``gen_*`` columns after ``K``)."""
    import pandas as pd

    df = pd.DataFrame(list(rows))
    gen = sorted(c for c in df.columns if c.startswith("gen_"))
    order = [*FIRST_COLUMNS, *gen, *MIDDLE_COLUMNS, *LAST_COLUMNS]
    order += [c for c in df.columns if c not in order]
    for c in order:
        if c not in df.columns:
            df[c] = None
    df = df[order]
    for c in gen:  # outside files may mix types in one generator field: keep them as text
        kinds = {type(v) for v in df[c] if v is not None and not (isinstance(v, float) and v != v)}
        if len(kinds) > 1 and not kinds <= {int, float}:
            df[c] = [None if v is None or (isinstance(v, float) and v != v) else str(v) for v in df[c]]
    if len(df):
        df = df.sort_values(["instance_file", "instance", "config"], kind="stable", na_position="last")
    for c in ("K", "served", "bound", "nodes", "lp_iterations", "p2_optimum"):
        df[c] = pd.to_numeric(df[c], errors="coerce").astype("Int64")
    for c in ("z", "lambda", "runtime_s", "deterministic_time"):
        df[c] = pd.to_numeric(df[c], errors="coerce").astype("float64")
    df["feasible"] = df["feasible"].astype("boolean")
    return df.reset_index(drop=True)


def write_table(run_dir: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    """Write ``results.parquet`` and ``results.csv`` atomically."""
    df = frame(rows)
    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    atomic_write(run_dir / "results.parquet", buf.getvalue())
    atomic_write(run_dir / "results.csv", df.to_csv(index=False, lineterminator="\n"))


def solution_files(run_dir: Path) -> list[Path]:
    return sorted((run_dir / "solutions").glob("*.json"))


def rows_from_solutions(run_dir: Path) -> dict[str, dict[str, Any]]:
    """Every readable solution file's row, keyed by file name."""
    rows: dict[str, dict[str, Any]] = {}
    for path in solution_files(run_dir):
        try:
            sol = Solution.read(path)
        except InputError:
            continue  # not ours or damaged: the runner redoes its pair
        rows[path.name] = solution_row(sol, f"solutions/{path.name}")
    return rows


class TableWriter:
    """Keeps the rows of a run folder and rewrites the table at most every ``interval_s``."""

    def __init__(self, run_dir: Path, interval_s: float = 1.0) -> None:
        self.run_dir = run_dir
        self.interval_s = interval_s
        self.rows = rows_from_solutions(run_dir)
        self._last = 0.0
        self._cost = 0.0  # seconds the last write took
        self._dirty = True

    def update(self, file_name: str, sol: Solution) -> None:
        self.rows[file_name] = solution_row(sol, f"solutions/{file_name}")
        self._dirty = True
        self.flush(force=False)

    def flush(self, force: bool = True) -> None:
        now = time.monotonic()
        # wait at least ten times the last write's duration: rewriting a large table after
        # every answer would make a batch quadratic; this keeps the writes under ~10% of it
        wait = max(self.interval_s, 10.0 * self._cost)
        if self._dirty and (force or now - self._last >= wait):
            write_table(self.run_dir, [self.rows[k] for k in sorted(self.rows)])
            done = time.monotonic()
            self._last, self._dirty, self._cost = done, False, done - now


def read_results(paths: Iterable[str | Path]) -> pd.DataFrame:
    """Concatenate results tables: each path a run folder, a ``.parquet`` or a ``.csv`` file."""
    import pandas as pd

    frames = []
    for p in map(Path, paths):
        if p.is_dir():
            p = p / "results.parquet" if (p / "results.parquet").exists() else p / "results.csv"
        if not p.exists():
            raise InputError(str(p), "", "no results table here (expected a run folder or a table file)")
        check_regular_file(p)
        try:
            df = pd.read_parquet(p) if p.suffix == ".parquet" else pd.read_csv(p)
        except Exception as exc:
            raise InputError(str(p), "", f"cannot be read as a results table: {exc}") from None
        needed = ("instance_sha256", "K", "config", "status", "served", "runtime_s")
        missing = [c for c in needed if c not in df]
        if missing:
            raise InputError(str(p), "", f"is not a results table (missing columns {missing})")
        check_results(df.to_dict("records"), str(p))  # type: ignore[arg-type]
        df["run"] = str(p.parent if p.name.startswith("results.") else p)
        frames.append(df)
    if not frames:
        return frame([])
    records: list[dict[str, Any]] = pd.concat(frames, ignore_index=True).to_dict("records")  # type: ignore[assignment]
    return frame(records)
