#!/usr/bin/env bash
# Prepared at stop 63 (docs/rules.md, "The next GPU runs", 0), after s64-h200.sh: one refit cycle over
# experiments/fits/h200-s64.txt (stop 62's list, from which aa79734d was fitted): fill 25, whose plan the CPU made at
# stop 63 (`crossmeasure --fill 2 --fill-share 0.25 --plan-only H200`: 165 shapes, 179 (shape, config) pairs, most of
# them where the fit's groups had no config timed at every shape), the fit without the span round, span round 29
# (seed 129) over the families it changes, the refit with the typed softmax rules (h200-s64.typed) and its one score
# on held-out set 57 (seed 2089, drawn at stop 63 before any of this). Resumable: where the limit stops a step, copy
# what came back and run it again; probably two or three calls.
# Pack with `bash experiments/device/pack.sh STASH heuristics/h200.yaml [experiments/candidates/h200-s64*.yaml] --
# db/quack.sqlite $(sed 1,2d experiments/fits/h200-s64.txt | head -n -2) $(ls db/unsplit-*train*.sqlite
# db/mixtune*-probe-up-m5.sqlite) [db/crossmeasure-s64-*.sqlite db/heldout57.sqlite]`.
set -u
bash experiments/device/fill_span_refit.sh 64 25 29 129 57
