#!/usr/bin/env bash
# Prepared at stop 52 for the next H200 session (docs/rules.md, "The next GPU runs", 0), after s53-h200-a.sh: fill 21
# over the best-found studies of the spent sets 45 and 46 (104 shapes and 114 pairs by `--plan-only H200` on the CPU),
# the fit of that (`experiments/fits/h200-s53.txt` without its span line) and the families it changes or newly holds
# back against the shipped 48edc030 (`changed_kernels.py --held-back`), span round 25 over them, the refit from the
# whole list and its one score on held-out set 47 (seed 2078). crossmeasure and the gate run resume; the two fits are
# kept under experiments/candidates/ and not made again. Where the call's limit stops a step, copy what came back
# (`h200-s53-prespan.yaml`, `h200-s53.yaml` to experiments/candidates/, the databases to db/) and run the same script.
# An empty family list (the fill changed nothing) leaves no span round and no refit: the shipped file stays.
# Pack with `bash experiments/device/pack.sh STASH heuristics/h200.yaml [experiments/candidates/h200-s53*.yaml] --
# db/quack.sqlite db/bestfound45.sqlite db/bestfound45-large.sqlite db/bestfound46.sqlite db/bestfound46-large.sqlite
# [db/crossmeasure-s53-*.sqlite db/heldout47.sqlite]`, then run
#   tar xJf .carry/db.tar.xz && source .devdeps/env.sh && bash experiments/device/calls/s53-h200-b.sh
set -u
fits=experiments/fits
AV=$(ls experiments/heldout/*.json | paste -sd,)
FILL=$(sed 1,2d $fits/h200-s53.txt | head -n -2 | paste -sd' ')
PRE=$(sed 1,2d $fits/h200-s53.txt | head -n -1 | paste -sd' ')
prespan=experiments/candidates/h200-s53-prespan.yaml; cand=experiments/candidates/h200-s53.yaml
head -n -1 $fits/h200-s53.txt > /tmp/h200-s53-prespan.txt
BUDGET=${BUDGET:-560} bash experiments/device/steps.sh \
  "python3 -m inductor_tune crossmeasure $FILL --fill 2 --fill-share 0.25 --max-configs 4 --rounds 3 --no-progress \
   --avoid-draw $AV --storage db/crossmeasure-s53-fill21.sqlite && touch /tmp/fill21-done" \
  "[ -f $prespan ] || { [ -f /tmp/fill21-done ] && bash $fits/fit.sh /tmp/h200-s53-prespan.txt $prespan; } \
   && cp $prespan \$OUT/ && python3 $fits/changed_kernels.py heuristics/h200.yaml $prespan --held-back \
   | grep . | tee /tmp/fams" \
  "[ -s /tmp/fams ] && python3 -m inductor_tune crossmeasure $PRE --kernels \$(cat /tmp/fams) --span-probes 10 \
   --edge-probes 1 --seed 125 --rounds 3 --no-progress --avoid-draw $AV --storage db/crossmeasure-s53-span25.sqlite \
   && touch /tmp/span25-done" \
  "[ -f $cand ] || { [ -f /tmp/span25-done ] && bash $fits/fit.sh $fits/h200-s53.txt $cand; } && cp $cand \$OUT/" \
  "[ -f $cand ] && python3 -m inductor_tune validate $cand --no-progress --draw experiments/heldout/set47-draw.json \
   --rounds 3 --storage sqlite:///db/heldout47.sqlite"
