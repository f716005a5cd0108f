#!/usr/bin/env bash
# Prepared at stop 62 (docs/rules.md, "The next GPU runs", 0), after s62-h200-a.sh, which timed 047ab3bb's other
# model steps and two of the three coverage11 studies: the third (coverage11-fwd-long, resumable), then one refit
# cycle over experiments/fits/h200-s62.txt (the spent sets' best-found studies 49-54 and coverage11 since stop 57's
# list): fill 24, the fit without the span round, span round 28 (seed 128) over the families it changes, the refit
# with the typed softmax rules (h200-s62.typed) and its one score on held-out set 55 (seed 2087, drawn at stop 61
# before any of this). Resumable: where the limit stops a step, copy what came back and run it again.
# Pack with `bash experiments/device/pack.sh STASH heuristics/h200.yaml [experiments/candidates/h200-s62*.yaml] --
# db/quack.sqlite $(sed 1,2d experiments/fits/h200-s62.txt | head -n -2) $(ls db/unsplit-*train*.sqlite
# db/mixtune*-probe-up-m5.sqlite) [db/crossmeasure-s62-*.sqlite db/heldout55.sqlite]`.
set -u
T0=$(date +%s); B=${BUDGET:-560}
BUDGET=200 bash experiments/device/steps.sh "python3 -m inductor_tune tune experiments/coverage11-fwd-long.yaml \
  --storage sqlite:///db/coverage11-fwd-long.sqlite --no-progress 2>&1 | tail -12 && touch /tmp/fwd-long-done"
# The fill reads every study of the list; without the whole fwd-long study it waits for the next call.
[ -f /tmp/fwd-long-done ] || exit 0
BUDGET=$((B - ($(date +%s) - T0))) bash experiments/device/fill_span_refit.sh 62 24 28 128 55
