#!/usr/bin/env bash
# Stop 49, second H200 call (docs/rules.md "Stop 49"): the rest of the coverage10 studies, set 43's best-found
# studies, fill 19 (the size groups those and set 42's best-found studies leave without an adoptable config timed at
# all their shapes), then the shipped 0128e279 against set 43's best found.
#   tar xJf .carry/db.tar.xz && source .devdeps/env.sh && bash experiments/device/calls/s49-h200-b.sh
set -u
ship=heuristics/h200.yaml; bf=experiments/bestfound-set43; bfl=experiments/bestfound-set43-large
fits=experiments/fits
AV=$(ls experiments/heldout/*.json | paste -sd,)
PRE=$(sed 1,2d $fits/h200-s49.txt | head -n -2 | paste -sd' ')
v="python3 -m inductor_tune validate"; t="python3 -m inductor_tune tune"
BUDGET=${BUDGET:-560} bash experiments/device/steps.sh \
  "$t experiments/coverage10-mix-many-rows.yaml --storage sqlite:///db/coverage10-mix-many-rows.sqlite --no-progress" \
  "$t $bf/problems.yaml --storage sqlite:///db/bestfound43.sqlite --no-progress" \
  "$t $bfl/problems.yaml --storage sqlite:///db/bestfound43-large.sqlite --no-progress" \
  "python3 -m inductor_tune crossmeasure $PRE --fill 2 --fill-share 0.25 --max-configs 4 --rounds 3 --no-progress \
   --avoid-draw $AV --storage db/crossmeasure-s49-fill19.sqlite" \
  "$v $ship --suite $bf/problems.yaml --db db/bestfound43.sqlite --no-progress \
   --storage sqlite:///db/bestfound43-validate-0128e279.sqlite" \
  "$v $ship --suite $bfl/problems.yaml --db db/bestfound43-large.sqlite --no-progress \
   --storage sqlite:///db/bestfound43-large-validate-0128e279.sqlite"
