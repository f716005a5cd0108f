#!/usr/bin/env bash
# Prepared at stop 74 for the H200 sessions after experiments/device/calls/s72-h200.sh's PART=tests and SAMPLES=1
# (docs/rules.md, "The next GPU runs", 0): cd6c1b3d ships where its GPU tests pass, and set 64's best-found studies
# join the evidence. One refit cycle over experiments/fits/h200-s74.txt: h200-s72.txt's list and set 64's best-found
# studies, then fill 28 with a shape budget (`--fill-share 0 --fill-shapes 400`: candidates timed at any share, the
# sets where the fit's rules leave the most to the best found per shape to time first; on stop 73's data 400 shapes
# and 724 (shape, config) pairs, planned in 110 s, `--plan-only` on the CPU), the fit without the span round, span
# round 34 (seed 134) over the families it changes, the refit experiments/candidates/h200-s74.yaml and its one score on
# held-out set 65 (seed 2097, drawn at stop 73 before any of this evidence). Several calls; resumable: where the limit
# stops a step, copy what came back (the fits to experiments/candidates/, the databases to db/) and pack it before the
# next call: a call's copy of the tree has no db/ of its own (stop 73). BUDGET: the last lease's budget_left_s less
# 40 s. With FITS_ON_CPU=1 a call makes no fit: after the call whose log shows the fill (then the span round) ended
# with rc=0, make the fit on the CPU machine, `bash experiments/device/fill_span_refit.sh --cpu 74 28 34 134 65`
# (about 90 s each), and pack it (experiments/candidates/h200-s74-prespan.yaml, then h200-s74.yaml).
# Stop 75 ran fill 28 and span round 34 and made both fits on the CPU (h200-s74-prespan.yaml 6f05cb0b, the refit
# h200-s74.yaml 0061e5b7): with the refit packed, a call goes straight to set 65's score (about 330 s).
#   PART=tests: the GPU tests with the refit installed (as s72-h200.sh's; PART=tests-c and tests-d split them);
#   PART=model: the refit's `gpt2-768-t400` step (db/models-h200-s74.sqlite);
#   SAMPLES=1: set 65's best-found studies and both suites validated with the refit (after its score).
# Pack with `bash experiments/device/pack.sh STASH heuristics/h200.yaml [experiments/candidates/h200-s74*.yaml] --
# db/quack.sqlite $(sed 1,2d experiments/fits/h200-s74.txt | head -n -2) $(ls db/unsplit-*train*.sqlite
# db/mixtune*-probe-up-m5.sqlite) [db/crossmeasure-s74-*.sqlite db/heldout65.sqlite db/bestfound65*.sqlite]`.
set -u
B=${BUDGET:-560}
cand=experiments/candidates/h200-s74.yaml
if [ -n "${SAMPLES:-}" ] || [ -n "${PART:-}" ]; then
  exec bash experiments/device/candidate_parts.sh $cand 65 74
fi
BUDGET=$B FILL_ARGS="--fill-share 0 --fill-shapes 400" bash experiments/device/fill_span_refit.sh 74 28 34 134 65
