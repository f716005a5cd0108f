"""The generalization gate: validate a heuristic file on random problems no study or crossmeasure ran.

A heuristic file is fitted on the shapes its studies and crossmeasure records cover; its held-out
scores come from shapes picked by people.  The gate draws problems at random instead (kernel
uniform, rows and reduction length log-uniform, so every order of magnitude and non-powers of two
appear), keeps out every (rows, cols) any study or crossmeasure record ran, whatever its kernel, and
passes only if no problem fails to compile or check and none regresses beyond the noise band.

The draw is a pure function of its arguments (``random.Random(seed)``, rejections included), and
``Draw`` is stored with every validation record of the run so the exact problems can be re-run.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import random
from typing import Any, Container, Iterable, Sequence

log = logging.getLogger(__name__)

ROWS = (1, 10**6)
COLS = (128, 262144)
# A gate worker holds the default and the heuristics variant compiled at once; one more variant's
# worth covers the allocator's slack, the chunked float64 check and the L2 flush buffer.
VARIANTS_HELD = 3
# Rejections (avoided shapes, repeats, oversize) cost draws; this many per problem before giving up
# keeps an impossible request (everything avoided, a tiny size bound) from looping forever.
ATTEMPTS_PER_PROBLEM = 50


def resident_factor(kernel: str) -> int:
    """Bytes a gate worker keeps alive for one problem, in units of one (rows, cols) activation."""
    from .kernels import get_kernel

    spec = get_kernel(kernel)
    # Per variant: its outputs twice (the eager result the check reads and the CUDA graph's static
    # outputs); a backward variant also keeps its forward's output and saved activation alive.
    per_variant = 2 * spec.activation_writes + (2 if spec.backward else 0)
    # activation_reads counts the resident (rows, cols) inputs, the incoming gradient included.
    return spec.activation_reads + VARIANTS_HELD * per_variant


def resident_bytes(kernel: str, rows: int, cols: int, dtype: str) -> int:
    from .problem import ELEMENT_SIZES

    if dtype not in ELEMENT_SIZES:
        raise ValueError(f"unknown dtype {dtype!r}; known: {', '.join(ELEMENT_SIZES)}")
    return resident_factor(kernel) * rows * cols * ELEMENT_SIZES[dtype]


def _log_uniform(rng: random.Random, low: int, high: int) -> int:
    return min(high, max(low, round(math.exp(rng.uniform(math.log(low), math.log(high))))))


def draw_problems(n: int, seed: int, kernels: Sequence[str] | None, avoid: Container[tuple[int, int]],
                  max_bytes: int, dtype: str = "bf16", rows: tuple[int, int] = ROWS,
                  cols: tuple[int, int] = COLS) -> list:
    """n distinct ``evaluate.Problem``s drawn from ``random.Random(seed)``, none at an avoided (rows, cols).

    kernels: catalog names (None: the whole catalog); avoid: (rows, cols) pairs kept out for every
    kernel; max_bytes: bound on ``resident_bytes``; rows, cols: inclusive ranges to draw from (a
    held-out set inside the sizes the rules claim, where the whole space would touch few of them).
    Raises ValueError when n cannot be drawn.
    """
    from .kernels import CATALOG, get_kernel
    from .problem import Problem, Shape

    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"the gate needs at least one problem (got {n!r})")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        # random.Random seeds an int by its absolute value: -s would silently repeat s's draw.
        raise ValueError(f"the seed must be a non-negative integer (got {seed!r})")
    if not max_bytes > 0:
        raise ValueError(f"the size bound must be positive (got {max_bytes!r} bytes)")
    for what, (low, high), (least, most) in (("rows", rows, ROWS), ("cols", cols, COLS)):
        if not least <= low <= high <= most:
            raise ValueError(f"the {what} range {low}:{high} is not within {least}:{most}")
    kernels = list(CATALOG) if kernels is None else list(kernels)
    if not kernels:
        raise ValueError("the gate needs at least one kernel")
    for kernel in kernels:
        get_kernel(kernel)
    resident_bytes(kernels[0], 1, 1, dtype)  # unknown dtypes fail here, before any draw
    rng = random.Random(seed)
    drawn: list = []
    seen: set[tuple[str, int, int]] = set()
    rejected = {"avoided": 0, "repeated": 0, "too large": 0}
    for _ in range(ATTEMPTS_PER_PROBLEM * n):
        if len(drawn) == n:
            break
        # Every attempt consumes the same three numbers, so the sequence depends only on the seed
        # and on which attempts were rejected.
        kernel = kernels[rng.randrange(len(kernels))]
        m, k = _log_uniform(rng, *rows), _log_uniform(rng, *cols)
        if (m, k) in avoid:
            rejected["avoided"] += 1
        elif (kernel, m, k) in seen:
            rejected["repeated"] += 1
        elif resident_bytes(kernel, m, k, dtype) > max_bytes:
            rejected["too large"] += 1
        else:
            seen.add((kernel, m, k))
            drawn.append(Problem(kernel, Shape(m, k), dtype))
    if len(drawn) < n:
        raise ValueError(f"drew only {len(drawn)} of {n} problems in {ATTEMPTS_PER_PROBLEM * n} attempts "
                         f"(rejected: {', '.join(f'{v} {k}' for k, v in rejected.items())}); "
                         "raise the size bound, ask for fewer problems or avoid fewer shapes")
    log.info("drew %d problems with seed %d; rejected %s", n, seed, rejected)
    return drawn


def studied_shapes(stores: Iterable) -> set[tuple[int, int]]:
    """(rows, cols) of every study and crossmeasure record in these ``Store``s, of any kernel or GPU."""
    shapes: set[tuple[int, int]] = set()
    for store in stores:
        shapes |= {(int(s.rows), int(s.cols)) for s in store.studies()}
        shapes |= {(int(r.rows), int(r.cols)) for r in store.crossmeasures()}
    return shapes


@dataclasses.dataclass(frozen=True)
class Draw:
    """One gate draw: its arguments and the problems they gave, enough to re-run it exactly."""

    seed: int
    n: int
    kernels: tuple[str, ...]
    dtype: str
    max_bytes: int
    problems: tuple[tuple[str, int, int, str], ...]  # (kernel, rows, cols, dtype)
    avoided_from: tuple[str, ...] = ()  # the databases whose shapes were kept out
    rows: tuple[int, int] = ROWS
    cols: tuple[int, int] = COLS
    # Held-out draws whose shapes were kept out too: a draw avoids only what its databases studied, so two draws of
    # one seed repeat each other (stop 85 found H100 sets 6-11 holding 288-292 problems of H200 sets 15-20).
    avoided_draws: tuple[str, ...] = ()

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "Draw":
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("a draw is a JSON object")
        problems = tuple(tuple(p) for p in data["problems"])
        for p in problems:
            if not (len(p) == 4 and isinstance(p[0], str) and isinstance(p[3], str)
                    and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in p[1:3])):
                raise ValueError(f"a problem is [kernel, rows, cols, dtype], not {list(p)!r}"[:200])
        return cls(data["seed"], data["n"], tuple(data["kernels"]), data["dtype"], data["max_bytes"], problems,
                   tuple(data.get("avoided_from", ())), tuple(data.get("rows", ROWS)), tuple(data.get("cols", COLS)),
                   tuple(data.get("avoided_draws", ())))

    def as_problems(self) -> list:
        from .problem import Problem, Shape

        return [Problem(k, Shape(rows, cols), dtype) for k, rows, cols, dtype in self.problems]


def make_draw(n: int, seed: int, kernels: Sequence[str] | None, avoid: Container[tuple[int, int]],
              max_bytes: int, dtype: str = "bf16", avoided_from: Sequence[str] = (), rows: tuple[int, int] = ROWS,
              cols: tuple[int, int] = COLS, avoided_draws: Sequence[str] = ()) -> Draw:
    from .kernels import CATALOG

    problems = draw_problems(n, seed, kernels, avoid, max_bytes, dtype, rows, cols)
    return Draw(seed, n, tuple(CATALOG if kernels is None else kernels), dtype, int(max_bytes),
                tuple((p.kernel, p.shape.rows, p.shape.cols, p.dtype) for p in problems), tuple(avoided_from),
                tuple(rows), tuple(cols), tuple(avoided_draws))


@dataclasses.dataclass(frozen=True)
class GateSummary:
    drawn: int
    failures: tuple[tuple[str, str], ...]  # (problem, why): no compile, no check, no timing
    measured: int
    touched: int  # problems a rule applied to (as the runtime logged it), those of ``same_program`` included
    geomean_touched: float  # speedup, default time / heuristics time (> 1: faster); nan without touched ones
    geomean_all: float
    worst_ratio: float  # over touched problems
    worst_problem: str
    regressions: tuple[str, ...]
    seed: int | None = None
    # touched problems whose compile built Inductor's own kernels and configs anyway (``validate.same_program``),
    # and the worst ratio among them: compile-to-compile variance, which cannot regress
    same_program: int = 0
    worst_same_program: float = float("nan")

    @property
    def passed(self) -> bool:
        return not self.failures and not self.regressions

    def render(self) -> str:
        fmt = lambda x: "n/a" if math.isnan(x) else f"{x:.3f}"  # noqa: E731
        lines = [
            f"gate: seed {self.seed}, {self.drawn} problems drawn, {self.measured} measured, "
            f"{len(self.failures)} failed to compile or check",
            f"rules touched {self.touched} of {self.measured} measured problems"
            + (f" ({self.same_program} of them compiled to Inductor's own kernels and launch configs, which cannot "
               f"regress: worst {fmt(self.worst_same_program)})" if self.same_program else ""),
            f"heuristics vs Inductor default: geomean {fmt(self.geomean_touched)} over touched problems, "
            f"{fmt(self.geomean_all)} over all; worst touched {fmt(self.worst_ratio)}"
            + (f" ({self.worst_problem})" if self.worst_problem else ""),
            f"regressions beyond noise: {len(self.regressions)}" + (f" ({', '.join(self.regressions)})"
                                                                   if self.regressions else ""),
        ]
        lines += [f"failed: {problem}: {why}" for problem, why in self.failures]
        reasons = [f"{len(self.failures)} failure(s)"] * bool(self.failures) + \
            [f"{len(self.regressions)} regression(s)"] * bool(self.regressions)
        lines.append("PASS" if self.passed else f"FAIL ({', '.join(reasons)})")
        return "\n".join(lines)


def summarize_gate(rows: Sequence[Any], draw: Draw | None = None) -> GateSummary:
    """The verdict over a gate run's ``validate.run_validation`` rows (``ValidationRow``s and
    ``ProblemFailure``s): PASS only without failures and without regressions beyond noise."""
    from .stats import geomean_or_nan as geomean
    from .validate import HEURISTICS, ProblemFailure

    failures, measured = [], []
    for row in rows:
        label = f"{row.kernel} {row.shape} {row.dtype}"
        if isinstance(row, ProblemFailure):
            failures.append((label, row.reason))
        elif row.variant(HEURISTICS) is None:
            # A variant is dropped untimed only when it failed its numerics check; a rule that
            # breaks a kernel is worse than one that slows it.
            why = [note for note in row.notes if note.startswith(HEURISTICS)]
            failures.append((label, why[0] if why else "the heuristics variant was not timed"))
        else:
            measured.append((label, row))
    ratios = {label: row.variant(HEURISTICS).ratio_to_default for label, row in measured}
    touched = {label: ratios[label] for label, row in measured if row.heuristics_applied}
    worst = min(touched, key=touched.get) if touched else ""  # untouched problems are 1 by construction
    return GateSummary(
        drawn=draw.n if draw is not None else len(rows), failures=tuple(failures), measured=len(measured),
        touched=len(touched), geomean_touched=geomean(list(touched.values())),
        geomean_all=geomean(list(ratios.values())), worst_ratio=touched[worst] if worst else float("nan"),
        worst_problem=worst,
        regressions=tuple(label for label, row in measured if row.regressed),
        seed=draw.seed if draw is not None else None,
        same_program=sum(row.same_program for _, row in measured),
        worst_same_program=min((ratios[label] for label, row in measured if row.same_program), default=float("nan")),
    )
