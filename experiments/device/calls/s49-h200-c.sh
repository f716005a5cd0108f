#!/usr/bin/env bash
# Stop 49, third H200 call (docs/rules.md "Stop 49"): span round 22 over the families whose config rules the fit
# before it changes against the shipped 0128e279 (experiments/fits/changed_kernels.py on the CPU, from the list
# without span 22: layernorm_bwd, nn_layernorm_nobias_fwd, scaled_softmax_bwd), the refit, and its one score on
# held-out set 44.
#   tar xJf .carry/db.tar.xz && source .devdeps/env.sh && bash experiments/device/calls/s49-h200-c.sh
set -u
fits=experiments/fits
AV=$(ls experiments/heldout/*.json | paste -sd,)
PRE=$(sed 1,2d $fits/h200-s49.txt | head -n -1 | paste -sd' ')
fams=layernorm_bwd,nn_layernorm_nobias_fwd,scaled_softmax_bwd
BUDGET=${BUDGET:-500} bash experiments/device/steps.sh \
  "python3 -m inductor_tune crossmeasure $PRE --kernels $fams --span-probes 10 --edge-probes 1 --seed 122 --rounds 3 \
   --no-progress --avoid-draw $AV --storage db/crossmeasure-s49-span22.sqlite" \
  "bash $fits/fit.sh $fits/h200-s49.txt \$OUT/h200-s49.yaml" \
  "python3 -m inductor_tune validate \$OUT/h200-s49.yaml --no-progress --draw experiments/heldout/set44-draw.json \
   --rounds 3 --storage sqlite:///db/heldout44.sqlite"
