"""Which rule form touched each problem of `validate` records, and where a problem regressed, what ran there.

For each database: the problems a multi-kernel entry touched, those only config rules touched, and the untouched
ones (count, geomean of rules / default, worst, how many below 1); then every problem that regressed beyond noise
with its default time, the rules that applied, and the launch configs of Inductor's own (not fixed-config) kernels
in the default's compile and in the rules' compile, as `validate` recorded them ("default_choice" and
"heuristic_choice"), and which kernel each entry ran where the record keeps it ("multi_kernel_picks"). Where
the configs differ at a kernel the rules left to Inductor, the ratio is one draw of Inductor's autotuner as much
as of the rules (docs/rules.md, stop 58).

Usage: python3 experiments/multikernel_attribution.py db/heldout49.sqlite [more validation DBs] [--all]
(--all lists every problem, not only those that regressed).
"""

import json
import sqlite3
import statistics
import sys
from typing import NamedTuple

from inductor_tune.stats import geomean

FORMS = ("multi-kernel entry", "config rules only", "untouched")


def form(rules_applied):
    if any(line.startswith("multi-kernel") for line in rules_applied):
        return FORMS[0]
    return FORMS[1] if rules_applied else FORMS[2]


def own_configs(choice):
    """Inductor's own kernels of a recorded choice: (kernel name, config), fixed-config kernels left out."""
    return [(c["kernel"], c["config"]) for c in choice or [] if "FIXED" not in str(c.get("heuristic"))]


def configs_only(own):
    return sorted(json.dumps(config, sort_keys=True) for _, config in own)


class Problem(NamedTuple):
    kernel: str
    shape: str
    regressed: bool
    ratio: float  # rules / default
    default_us: float
    form: str
    applied: list
    own_default: list  # own_configs of the default's compile
    own_rules: list  # and of the rules' compile
    picks: list  # the multi-kernel picks validate keeps since stop 58


def problems(result_rows):
    """A ``Problem`` for each timed record of ``result_rows``, (kernel, rows, cols, regressed, result JSON)
    tuples."""
    out = []
    for kernel, rows, cols, regressed, result_json in result_rows:
        result = json.loads(result_json)
        times = result.get("times", {})
        if "heuristics" not in times or "inductor_default" not in times:
            continue
        default = statistics.median(times["inductor_default"])
        applied = result.get("rules_applied") or []
        out.append(Problem(kernel, f"{rows}x{cols}", bool(regressed), default / statistics.median(times["heuristics"]),
                    default * 1e3, form(applied), applied, own_configs(result.get("default_choice")),
                    own_configs(result.get("heuristic_choice")), result.get("multi_kernel_picks") or []))
    return out


def report(rows, everything=False):
    lines = []
    for name in FORMS:
        ratios = [p.ratio for p in rows if p.form == name]
        if ratios:
            lines.append(f"{name}: {len(ratios)} problems, geomean {geomean(ratios):.3f}, worst {min(ratios):.3f}, "
                         f"{sum(r < 1 for r in ratios)} below 1, {sum(p.regressed for p in rows if p.form == name)} "
                         "regressed")
    for p in rows:
        if p.regressed or everything:
            # By configs alone: the rules' compile numbers its kernels on from the entries' (stop 59, 8x12071).
            same = "same" if configs_only(p.own_default) == configs_only(p.own_rules) else "differ"
            lines.append(f"  {p.kernel} {p.shape}: {p.ratio:.3f}{' REGRESSED' if p.regressed else ''}, default "
                         f"{p.default_us:.1f} us, {p.form}; Inductor's own configs {same}")
            if same == "differ":
                lines += [f"    default: {p.own_default}", f"    rules:   {p.own_rules}"]
            lines += [f"    {line[:150]}" for line in p.applied]
            lines += [f"    picked: {line[:150]}" for line in p.picks]
    return lines


def main(argv):
    everything = "--all" in argv
    for path in [a for a in argv if a != "--all"]:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            result_rows = db.execute("select kernel, rows, cols, regressed, result_json from it_validation").fetchall()
        print(path)
        print("\n".join(report(problems(result_rows), everything)))


if __name__ == "__main__":
    main(sys.argv[1:])
