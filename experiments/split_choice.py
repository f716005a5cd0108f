"""Did a backward study's best config keep Inductor's splits, or turn them off?

    python3 experiments/split_choice.py db/bestfound60.sqlite db/bestfound58.sqlite ...

For each backward study of the databases: the best GB/s among its trials at Inductor's flags (no
``graph.split_reductions`` parameter: the default trial and trials of a space without the flag), with
``split_reductions`` on, and with it off. Below Inductor's mix-order threshold a norm backward's weight gradient is
a column sum Inductor splits; where the best with the split off is well above the best with it on, keeping that
sum whole is what the study found (docs/rules.md, stop 69). A diagnostic of studies already spent as held-out
samples: it reads the records and writes nothing, and no fit reads it.
"""

from __future__ import annotations

import argparse

import optuna

PARAM = "graph.split_reductions"


def best_by_split(db: str) -> list[tuple[str, dict]]:
    """(study name, {"Inductor's flags" | "split on" | "split off": best GB/s}) of each backward study."""
    storage = optuna.storages.RDBStorage(f"sqlite:///file:{db}?mode=ro&uri=true")  # never writes the record
    out = []
    for summary in optuna.get_all_study_summaries(storage, include_best_trial=False):
        if "_bwd/" not in summary.study_name:
            continue
        study = optuna.load_study(study_name=summary.study_name, storage=storage)
        best: dict[str, float] = {}
        for trial in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)):
            if "gbps" not in trial.user_attrs:
                continue
            split = trial.params.get(PARAM)
            key = "Inductor's flags" if split is None else "split on" if split else "split off"
            best[key] = max(best.get(key, 0.0), float(trial.user_attrs["gbps"]))
        out.append((summary.study_name.split("@")[0], best))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dbs", nargs="+")
    args = ap.parse_args(argv)
    print(f"{'study':48} {'flags':>7} {'on':>7} {'off':>7}")
    for db in args.dbs:
        for name, best in best_by_split(db):
            cells = [f"{best[k]:7.0f}" if k in best else f"{'-':>7}" for k in ("Inductor's flags", "split on",
                                                                               "split off")]
            print(f"{name:48} {' '.join(cells)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
