"""Would two heuristic files launch the same configs at the reduction kernels of a recorded model step?

    python3 experiments/model_launches.py OLD.yaml NEW.yaml db/models-....sqlite MODEL[,MODEL...]

A `validate --models` record keeps, for each kernel its compiles built, the size hints and launch configs, not the
features a rule matches on (the reduction type, the envelope). So for each reduction kernel of the record this asks
both files' rule tables (`torch_rules.lookup`, first match in table order) at the kernel's sizes, under every kind,
element size, reduction type and envelope either file names, and under an unnamed one; a kernel whose features
neither file names matches what the unnamed case matches. Where every answer launches the same config, and the
unsplit rules, split-autotune and multi-kernel entries are equal, the two files compile that model the same way.
Column unsplit rules (stop 70) decide before any kernel exists, from the column sum's rows and outputs; a step's
column sums run over its tokens, so for each model it lists both files' column rules whose rows hold that count.

The sizes asked are the size hints (powers of two). They are the kernels' actual sizes where the model's token count
and hidden size are powers of two: its norms' reductions then run over tokens, hidden, or one of them split in
powers of two (e.g. Llama-8192's weight gradient, 131072 x 512 = 8192 x 16 by 8192 / 16). A model whose token count
or hidden size is not is reported as not comparable. Stop 63 used it for the two Llama steps the device time did
not reach (docs/rules.md, "Stop 63").
"""
from __future__ import annotations

import argparse
import json
import sqlite3
from typing import Iterator

from inductor_tune import heuristics
from inductor_tune.runtime import torch_rules

ELEMENT_SIZES = (1, 2, 4, 8)
ENTRY_KINDS = ("unsplit", "mix_autotune", "multi_kernel")


def launch(rule) -> tuple | None:
    """What a table rule launches (None: Inductor's own configs)."""
    if rule is None:
        return None
    return (rule.persistent, rule.XBLOCK, rule.num_warps, rule.R0_BLOCK, rule.num_stages, rule.RSPLIT_SIZE,
            rule.NUM_STAGES)


def reduction_kernels(record: dict) -> set[tuple[int, int]]:
    """(xnumel, rnumel) of every reduction kernel the record's compiles built, from their size hints."""
    return {(kernel["size_hints"]["x"], kernel["size_hints"]["r0_"])
            for variant in ("inductor_default", "heuristics") for kernel in record["choices"].get(variant) or []
            if set(kernel.get("size_hints") or {}) == {"x", "r0_"}}


def _keys(tables, xnumel: int, rnumel: int) -> Iterator[dict]:
    rules = [rule for table in tables for rule in table.rules
             if rule.rnumel[0] <= rnumel <= rule.rnumel[1] and rule.xnumel[0] <= xnumel <= rule.xnumel[1]]
    envelopes = {envelope for rule in rules for envelope in rule.envelopes} | {None}
    reductions = {rule.reductions for rule in rules} | {None}
    for kind in sorted({rule.kind for rule in rules}):
        for element_size in ELEMENT_SIZES:
            for envelope in envelopes:
                for reduction in reductions:
                    yield dict(kind=kind, element_size=element_size, rnumel_pow2=rnumel, xnumel_pow2=xnumel,
                               reductions=reduction, envelope=envelope, rows=xnumel, cols=rnumel)


def launch_differences(old, new, kernels: set[tuple[int, int]]) -> list[str]:
    """One line per kernel key at which the two files launch different configs (empty: the same everywhere)."""
    tables = (old.table(), new.table())
    lines = []
    for xnumel, rnumel in sorted(kernels):
        for key in _keys(tables, xnumel, rnumel):
            launched = [launch(torch_rules.lookup(table=table, **key)) for table in tables]
            if launched[0] != launched[1]:
                lines.append(f"x={xnumel} r={rnumel} {key['kind']} element_size={key['element_size']} "
                             f"reductions={key['reductions']} envelope={key['envelope']}: {launched[0]} -> "
                             f"{launched[1]}")
    return lines


def column_rules_at(heuristic_file, tokens: int) -> list[str]:
    """The file's column unsplit rules whose rows hold a step's token count: a transformer step's column reductions
    (weight and bias gradients) sum over its tokens, so only these can keep one of them whole."""
    return [f"{rule.rows[0]}..{rule.rows[1]} x {rule.cols[0]}..{rule.cols[1]}" for rule in heuristic_file.unsplit
            if rule.outer and rule.rows[0] <= tokens <= rule.rows[1]]


def compare(old_path: str, new_path: str, database: str, models: list[str]) -> list[str]:
    old, new = heuristics.load(old_path), heuristics.load(new_path)
    out = [f"{kind}: {'equal' if getattr(old, kind) == getattr(new, kind) else 'DIFFER'}" for kind in ENTRY_KINDS]
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as connection:
        for model in models:
            row = connection.execute("select result_json from it_validation where kernel = ? order by id desc",
                                     (f"model:{model}",)).fetchone()
            if row is None:
                out.append(f"{model}: no record in {database}")
                continue
            record = json.loads(row[0])
            sizes = (record.get("tokens") or 0, (record.get("spec") or {}).get("hidden") or 0)
            # A column rule decides from the token count alone, so this holds for any count, a power of two or not.
            for name, heuristic_file in (("old", old), ("new", new)):
                held = column_rules_at(heuristic_file, sizes[0])
                out.append(f"{model}: {name} file's column unsplit rules holding at {sizes[0]} rows: "
                           f"{', '.join(held) or 'none'}")
            if not all(size > 0 and size & (size - 1) == 0 for size in sizes):
                out.append(f"{model}: not comparable (tokens x hidden {sizes[0]}x{sizes[1]}: size hints are not the "
                           "actual sizes)")
                continue
            kernels = reduction_kernels(record)
            differences = launch_differences(old, new, kernels)
            verdict = "the same launch configs at every key" if not differences else f"{len(differences)} key(s) differ"
            out.append(f"{model}: {len(kernels)} reduction kernel size(s), {verdict}")
            out.extend(f"  {line}" for line in differences)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("database", help="a validate --models storage (SQLite file)")
    parser.add_argument("models", help="comma-separated model names, e.g. llama-4096,llama-8192")
    args = parser.parse_args()
    print("\n".join(compare(args.old, args.new, args.database, args.models.split(","))))


if __name__ == "__main__":
    main()
