#!/usr/bin/env bash
# Prepared at stop 66 (docs/rules.md, "The next GPU runs", 0), for after s67-h200.sh: one H200 refit cycle over
# experiments/fits/h200-s67.txt, which is fcb2b8aa's list (h200-s66.txt) plus the spent sets' best-found studies 55,
# 57 and 58 and the coverage12 studies (drawn at stop 66 from set 58's gap, after set 59 was committed). First what
# is left of the coverage12 studies (resumable; the fill reads every study of the list, so it waits for them), then
# fill 26, the fit without the span round, span round 32 (seed 132) over the families it changes, the refit
# experiments/candidates/h200-s67.yaml and its one score on held-out set 59 (seed 2091, drawn at stop 66 before any of
# this). With SAMPLES=1, set 59's best-found studies and both suites validated with the refit instead (after its
# score). Probably three calls; resumable: where the limit stops a step, copy what came back (the fits to
# experiments/candidates/, the databases to db/) and run it again. BUDGET: the last lease's budget_left_s less 40 s.
# With FITS_ON_CPU=1 (stop 67) a call makes no fit: after the call whose log shows the fill (then the span round)
# ended with rc=0, make the fit on the CPU machine, `bash experiments/device/fill_span_refit.sh --cpu 67 26 32 132 59`
# (about 100 s each), and pack it (experiments/candidates/h200-s67-prespan.yaml, then h200-s67.yaml) for the next call.
# Pack with `bash experiments/device/pack.sh STASH heuristics/h200.yaml [experiments/candidates/h200-s67*.yaml] --
# db/quack.sqlite $(sed 1,2d experiments/fits/h200-s67.txt | head -n -4) $(ls db/unsplit-*train*.sqlite
# db/mixtune*-probe-up-m5.sqlite) [db/coverage12-*.sqlite db/crossmeasure-s67-*.sqlite db/heldout59.sqlite]`.
set -u
T0=$(date +%s); B=${BUDGET:-560}
if [ -n "${SAMPLES:-}" ]; then
  cand=experiments/candidates/h200-s67.yaml
  digest=$(python3 -c "from inductor_tune.runtime.rulefile import load; print(load('$cand').digest()[:8])")
  BUDGET=$B bash experiments/device/bestfound.sh experiments/bestfound-set59 bestfound59 "$cand" "$digest"
  exit 0
fi
BUDGET=$((B < 300 ? B : 300)) bash experiments/device/steps.sh \
  "python3 -m inductor_tune tune experiments/coverage12-bwd-fewrows.yaml \
   --storage sqlite:///db/coverage12-bwd-fewrows.sqlite --no-progress 2>&1 | tail -12 \
   && python3 -m inductor_tune tune experiments/coverage12-softmax-fwd.yaml \
   --storage sqlite:///db/coverage12-softmax-fwd.sqlite --no-progress 2>&1 | tail -8 && touch /tmp/coverage12-done"
[ -f /tmp/coverage12-done ] || exit 0
BUDGET=$((B - ($(date +%s) - T0))) bash experiments/device/fill_span_refit.sh 67 26 32 132 59
