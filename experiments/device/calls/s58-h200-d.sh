#!/usr/bin/env bash
# Stop 58, after s58-h200-c.sh, where h200-s57-mk3.yaml with the new pick failed set 50 on 5 regressions (10 at set
# 49 with Inductor's): which kernel the pick ran at those and what it timed (experiments/multikernel/probe-set50.yaml,
# a diagnostic on spent data, with the pick's DEBUG lines), then the model steps with the file (`validate --models`,
# each variant's compile seconds: what the entries cost a model's compile). Nothing is shipped.
# Pack with `bash experiments/device/pack.sh STASH heuristics/h200.yaml experiments/candidates/h200-s57-mk3.yaml --
# db/quack.sqlite`.
set -u
cand=experiments/candidates/h200-s57-mk3.yaml
BUDGET=${BUDGET:-560} bash experiments/device/steps.sh \
  "python3 -m inductor_tune -vv validate $cand --suite experiments/multikernel/probe-set50.yaml --no-progress \
  --rounds 3 --storage sqlite:///db/multikernel-probe50.sqlite 2> \$OUT/picks.log | grep -v Warning | tail -12; \
  grep -h 'runs kernel' \$OUT/picks.log | sed 's/.*inductor_tune: //'" \
  "python3 -m inductor_tune validate $cand --no-progress --models --rounds 5 \
  --storage sqlite:///db/models-h200-s58-mk3.sqlite"
