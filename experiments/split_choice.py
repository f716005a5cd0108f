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
import json
import sqlite3

PARAM = "graph.split_reductions"


def best_by_split(db: str) -> list[tuple[str, dict]]:
    """(study name, {"Inductor's flags" | "split on" | "split off": best GB/s}) of each backward study."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    out = []
    for study_id, name in con.execute("select study_id, study_name from studies order by study_id"):
        if "_bwd/" not in name:
            continue
        rows = con.execute(
            """select p.param_value, p.distribution_json, a.value_json from trials t
               join trial_user_attributes a on a.trial_id = t.trial_id and a.key = 'gbps'
               left join trial_params p on p.trial_id = t.trial_id and p.param_name = ?
               where t.study_id = ? and t.state = 'COMPLETE'""", (PARAM, study_id)).fetchall()
        best: dict[str, float] = {}
        for index, distribution, gbps in rows:
            if index is None:
                key = "Inductor's flags"
            else:
                split = json.loads(distribution)["attributes"]["choices"][int(index)]
                key = "split on" if split else "split off"
            best[key] = max(best.get(key, 0.0), float(json.loads(gbps)))
        out.append((name.split("@")[0], best))
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
