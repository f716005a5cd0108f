#!/usr/bin/env bash
# Prepared at stop 49 for the next H200 session (docs/rules.md, "The next GPU runs", 0): span round 23 over the
# families whose rules the refit dcc558e3 changed or newly holds back against the shipped 0128e279
# (`changed_kernels.py --held-back`; 496 probes and 1382 pairs by `--plan-only H200`, about 390 s at span 22's rate),
# the refit from experiments/fits/h200-s50.txt, and its one score on held-out set 44. crossmeasure and the gate run
# both resume: where the call's limit stops either, copy what came back (the candidate to
# experiments/candidates/h200-s50.yaml) and run the same script again. The fit runs only after a span round that
# finished, and only once: a candidate already in experiments/candidates/ is scored as it is.
# Pack with `bash experiments/device/pack.sh STASH heuristics/h200.yaml experiments/candidates/h200-s49.yaml
# [experiments/candidates/h200-s50.yaml] -- db/quack.sqlite [db/crossmeasure-s50-span23.sqlite db/heldout44.sqlite]`
# (the bracketed files once an earlier call brought them back), then run
#   tar xJf .carry/db.tar.xz && source .devdeps/env.sh && bash experiments/device/calls/s50-h200-a.sh
set -u
fits=experiments/fits
AV=$(ls experiments/heldout/*.json | paste -sd,)
PRE=$(sed 1,2d $fits/h200-s50.txt | head -n -1 | paste -sd' ')
fams=$(python3 $fits/changed_kernels.py heuristics/h200.yaml experiments/candidates/h200-s49.yaml --held-back)
cand=experiments/candidates/h200-s50.yaml
BUDGET=${BUDGET:-560} bash experiments/device/steps.sh \
  "python3 -m inductor_tune crossmeasure $PRE --kernels $fams --span-probes 10 --edge-probes 1 --seed 123 --rounds 3 \
   --no-progress --avoid-draw $AV --storage db/crossmeasure-s50-span23.sqlite && touch /tmp/span23-done" \
  "[ -f $cand ] || { [ -f /tmp/span23-done ] && bash $fits/fit.sh $fits/h200-s50.txt $cand; } && cp $cand \$OUT/" \
  "[ -f $cand ] && python3 -m inductor_tune validate $cand --no-progress --draw experiments/heldout/set44-draw.json \
   --rounds 3 --storage sqlite:///db/heldout44.sqlite"
