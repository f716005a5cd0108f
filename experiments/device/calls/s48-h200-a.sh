#!/usr/bin/env bash
# Stop 48, first H200 call (docs/rules.md "Stop 48"): fill 18 over set 41's best-found studies, a fit, span round 21
# over the families whose config rules that fit changed against the shipped file, and the refit.
#   tar xJf .carry/db.tar.xz && source .devdeps/env.sh && bash experiments/device/calls/s48-h200-a.sh
set -u
fits=experiments/fits
AV=$(ls experiments/heldout/*.json | paste -sd,)
PRE=$(sed 1,2d $fits/h200-s48.txt | head -n -2 | paste -sd' ')
head -n -1 $fits/h200-s48.txt > /tmp/pre.txt
BUDGET=${BUDGET:-570} bash experiments/device/steps.sh \
  "python3 -m inductor_tune crossmeasure $PRE --fill 2 --fill-share 0.25 --max-configs 4 --rounds 3 --no-progress \
   --avoid-draw $AV --storage db/crossmeasure-s48-fill18.sqlite" \
  "bash $fits/fit.sh /tmp/pre.txt \$OUT/h200-s48-pre.yaml && \
   python3 $fits/changed_kernels.py heuristics/h200.yaml \$OUT/h200-s48-pre.yaml | tee /tmp/fams" \
  "F=\$(cat /tmp/fams); test -n \"\$F\" && python3 -m inductor_tune crossmeasure $PRE db/crossmeasure-s48-fill18.sqlite \
   --kernels \$F --span-probes 10 --edge-probes 1 --seed 121 --rounds 3 --no-progress --avoid-draw $AV \
   --storage db/crossmeasure-s48-span21.sqlite" \
  "bash $fits/fit.sh $fits/h200-s48.txt \$OUT/h200-s48.yaml"
