"""When one timed kernel beats another: the noise floor and the rule every verdict uses.

Times come as interleaved rounds: round i of the default and round i of a candidate were taken
back to back, so drift hits both alike and their ratio is a paired sample.  A candidate "beats"
the default only if it wins every round and its gain clears the larger of the noise floor and
either side's round-to-round spread.  No torch import: the parent process and the analysis tools
use it without a GPU stack.
"""

from __future__ import annotations

import dataclasses
import json
import math
import statistics
from typing import Any, Sequence

# Smallest relative change that counts.  Measured: on an H200 (2026-11-22), the same kernel compiled
# twice (validate's heuristics variant compiled to Inductor's own configs) timed up to 1.2 % away
# from the default in interleaved rounds whose own spread was below 0.3 %: compile-to-compile
# variance that no round-to-round spread reveals.
NOISE_FLOOR = 0.015

FASTER, SLOWER, WITHIN_NOISE = "faster", "slower", "within noise"

Rounds = Sequence[float | None]  # one median time per round; None: not timed (failed compile)


def geomean(values: Sequence[float]) -> float:
    """Geometric mean of positive values (ratios); a missing or non-positive one is an error, not
    something to drop silently."""
    if not values or any(not v > 0 for v in values):
        raise ValueError(f"geomean needs positive values, got {list(values)!r}")
    return math.exp(sum(math.log(v) for v in values) / len(values))


def geomean_or_nan(values: Sequence[float]) -> float:
    """``geomean`` of a summary that may have nothing to summarize (no problem a rule reached): nan."""
    return geomean(values) if len(values) else float("nan")


def spread(rounds: Rounds) -> float:
    """Relative range of one config's rounds: (max - min) / median, untimed rounds left out."""
    timed = _timed(rounds)
    if not timed:
        raise ValueError("spread of rounds none of which was timed")
    return (max(timed) - min(timed)) / statistics.median(timed)


@dataclasses.dataclass(frozen=True)
class Comparison:
    """A candidate's interleaved rounds against the default's.

    ``speedup`` is the ratio of medians (default / candidate), as every stored speedup is;
    ``low``/``high`` the extreme per-round ratios; ``wins`` how many of the ``rounds`` the candidate
    was faster in; ``band`` the relative gain that counts as real.
    """

    speedup: float
    low: float
    high: float
    wins: int
    rounds: int
    band: float

    @property
    def outcome(self) -> str:
        if self.wins == self.rounds and self.speedup > 1.0 + self.band:
            return FASTER
        # The mirror image: the default wins every round and by more than the band.
        if self.high < 1.0 and 1.0 / self.speedup > 1.0 + self.band:
            return SLOWER
        return WITHIN_NOISE

    def why(self) -> str:
        """One line for a verdict record: which conditions held, with their numbers."""
        gain = f"median gain {self.speedup - 1:+.2%} against a noise band of {self.band:.2%}"
        return f"{self.outcome}: faster in {self.wins} of {self.rounds} rounds, {gain}"


def compare(default_rounds: Rounds, candidate_rounds: Rounds, floor: float = NOISE_FLOOR) -> Comparison | None:
    """The two configs' rounds compared, or None unless every round of both was timed (a round
    without a time is no evidence either way, so "every round" cannot be shown)."""
    if not _paired(default_rounds, candidate_rounds):
        return None
    ratios = [d / c for d, c in zip(default_rounds, candidate_rounds)]
    band = max(floor, spread(default_rounds), spread(candidate_rounds))
    speedup = statistics.median(default_rounds) / statistics.median(candidate_rounds)
    return Comparison(speedup, min(ratios), max(ratios), sum(r > 1.0 for r in ratios), len(ratios), band)


def classify(default_rounds: Rounds, candidate_rounds: Rounds, floor: float = NOISE_FLOOR) -> str:
    """FASTER, SLOWER or WITHIN_NOISE (also when rounds are missing: nothing was shown)."""
    comparison = compare(default_rounds, candidate_rounds, floor)
    return comparison.outcome if comparison else WITHIN_NOISE


def beats_default(default_rounds: Rounds, candidate_rounds: Rounds, floor: float = NOISE_FLOOR) -> bool:
    """The candidate is faster in every round and its median gain exceeds the floor and both spreads."""
    return classify(default_rounds, candidate_rounds, floor) == FASTER


def ties_default(default_rounds: Rounds, candidate_rounds: Rounds, floor: float = NOISE_FLOOR) -> bool:
    return classify(default_rounds, candidate_rounds, floor) == WITHIN_NOISE


def _timed(rounds: Rounds) -> list[float]:
    return [t for t in rounds if t is not None]


def _paired(a: Rounds, b: Rounds) -> bool:
    return bool(a) and len(a) == len(b) and all(t is not None and t > 0 for t in (*a, *b))


# -- a study's verdict ---------------------------------------------------------------------------


def summarize_verdict(times: list[list[float | None]], finalists: list) -> dict[str, Any]:
    """Pick the finalist with the lowest median and its speedup over the default with the spread.

    ``times[0]`` is the default, ``times[i]`` finalist i-1, one entry per interleaved round.  The
    spread is the range of per-round ratios; "improved" follows ``beats_default``.
    """
    default_rounds = [t for t in times[0] if t is not None]
    base = dict(rounds_json=json.dumps(times), best_trial_number=None, best_config_json=None)
    if not default_rounds:
        return dict(base, default_ms=None, best_ms=None, speedup=None, speedup_low=None, speedup_high=None, improved=False)
    default_ms = statistics.median(default_rounds)
    best_i, best_ms = None, None
    for i, rounds in enumerate(times[1:]):
        valid = [t for t in rounds if t is not None]
        if valid and (best_ms is None or statistics.median(valid) < best_ms):
            best_i, best_ms = i, statistics.median(valid)
    if best_i is None:
        return dict(base, default_ms=default_ms, best_ms=None, speedup=None, speedup_low=None, speedup_high=None, improved=False)
    ratios = [d / b for d, b in zip(times[0], times[best_i + 1]) if d is not None and b is not None]
    return dict(
        base, best_trial_number=finalists[best_i].trial_number, best_config_json=finalists[best_i].config_json,
        default_ms=default_ms, best_ms=best_ms, speedup=default_ms / best_ms, speedup_low=min(ratios),
        speedup_high=max(ratios), improved=beats_default(times[0], times[best_i + 1]),
    )


def confirm_winner(times: list[list[float | None]], trial_number: int | None, config_json: str) -> dict[str, Any]:
    """The fields of a ``VerdictConfirmation``: ``times`` is [default rounds, winner rounds] of the
    fresh re-measure; the winner is confirmed only if it beats the default there too."""
    comparison = compare(times[0], times[1])
    return dict(
        best_trial_number=trial_number, config_json=config_json, rounds_json=json.dumps(times),
        speedup=comparison.speedup if comparison else None, speedup_low=comparison.low if comparison else None,
        speedup_high=comparison.high if comparison else None,
        confirmed=bool(comparison) and comparison.outcome == FASTER,
        reason=comparison.why() if comparison else "not every round of both was timed in the fresh compile",
    )
