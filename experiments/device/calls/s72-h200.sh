#!/usr/bin/env bash
# Prepared at stop 72 for the next H200 sessions (docs/rules.md, "The next GPU runs", 0). f8e76f08 is shipped
# (heuristics/h200.yaml: 5af72bc3's fit of experiments/fits/h200-s67.txt plus the column rules of three training
# draws, which passed held-out set 63). One refit cycle over experiments/fits/h200-s72.txt: h200-s67.txt's list, the
# spent sets' best-found studies 60-63 and the coverage13 studies (focused `column_split` studies of the RMSNorm
# backwards below the mix-order threshold, drawn at stop 72 after set 64 was committed), then fill 27, the fit without
# the span round, span round 33 (seed 133) over the families it changes, the refit experiments/candidates/h200-s72.yaml
# (fit.sh adds the column rules of experiments/fits/h200-s72.outer, as f8e76f08 has them) and its one score on held-out
# set 64 (seed 2096, drawn at stop 72 before coverage13). First what is left of the third coverage13 draw (resumable:
# 9 of its 12 problems were done). Several calls; resumable: where the limit stops a step, copy what came back (the
# fits to experiments/candidates/, the databases to db/) and run it again. BUDGET: the last lease's budget_left_s less
# 40 s. With FITS_ON_CPU=1 a call makes no fit: after the call whose log shows the fill (then the span round) ended
# with rc=0, make the fit on the CPU machine, `bash experiments/device/fill_span_refit.sh --cpu 72 27 33 133 64`
# (about 90 s each), and pack it (experiments/candidates/h200-s72-prespan.yaml, then h200-s72.yaml) for the next call.
#   PART=tests: the GPU tests with the refit installed (test files as in s71-h200.sh, parts c and d);
#   PART=model: the refit's `gpt2-768-t400` step (db/models-h200-s72.sqlite), where its column rules hold;
#   SAMPLES=1: set 64's best-found studies and both suites validated with the refit (after its score).
# Pack with `bash experiments/device/pack.sh STASH heuristics/h200.yaml [experiments/candidates/h200-s72*.yaml] --
# db/quack.sqlite $(sed 1,2d experiments/fits/h200-s72.txt | head -n -2) $(ls db/unsplit-*train*.sqlite
# db/mixtune*-probe-up-m5.sqlite) [db/crossmeasure-s72-*.sqlite db/heldout64.sqlite db/bestfound64*.sqlite]`.
set -u
T0=$(date +%s); B=${BUDGET:-560}
cand=experiments/candidates/h200-s72.yaml
if [ -n "${SAMPLES:-}" ] || [ -n "${PART:-}" ]; then
  exec bash experiments/device/candidate_parts.sh $cand 64 72
fi
BUDGET=$((B < 120 ? B : 120)) bash experiments/device/steps.sh \
  "python3 -m inductor_tune tune experiments/coverage13-bwd-column-split3.yaml \
   --storage sqlite:///db/coverage13-bwd-column-split3.sqlite --no-progress 2>&1 | tail -16 \
   && touch /tmp/coverage13-done"
[ -f /tmp/coverage13-done ] || exit 0
BUDGET=$((B - ($(date +%s) - T0))) bash experiments/device/fill_span_refit.sh 72 27 33 133 64
