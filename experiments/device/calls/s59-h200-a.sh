#!/usr/bin/env bash
# Prepared at stop 58 for the next H200 session (docs/rules.md, "The next GPU runs", 0). At set 50 the pick of stop
# 58 ran Inductor's own kernel at 3 of its 5 regressions, where Inductor's autotuner had settled that kernel on
# other configs than in the default's compile (7608x7496: R0_BLOCK 2048 against 8192, 0.966x twice). The pick now
# settles Inductor's own kernel too, by the median of the same burst timing (runtime/pick.py, settle_own). So: the
# GPU test of entries and the pick, the spent probe of set 50 again with the pick's DEBUG lines (a diagnostic), then
# the one score of h200-s57-mk3.yaml with that pick on held-out set 51 (seed 2082, drawn at stop 58 before it).
# Pack with `bash experiments/device/pack.sh STASH heuristics/h200.yaml experiments/candidates/h200-s57-mk3.yaml --
# db/quack.sqlite`.
set -u
cand=experiments/candidates/h200-s57-mk3.yaml
BUDGET=${BUDGET:-560} bash experiments/device/steps.sh \
  "python3 -m pytest -q -m gpu tests/test_gpu_multi_kernel.py -p no:cacheprovider -p no:warnings -rs 2>&1 | tail -4" \
  "python3 -m inductor_tune -vv validate $cand --suite experiments/multikernel/probe-set50.yaml --no-progress \
  --rounds 3 --storage sqlite:///db/multikernel-probe50-settle.sqlite 2> \$OUT/picks.log | grep -v Warning | tail -12; \
  grep -h 'of [0-9]* (Inductor.s is\|own kernel keeps' \$OUT/picks.log | sed 's/.*inductor_tune: //'" \
  "python3 -m inductor_tune validate $cand --no-progress --draw experiments/heldout/set51-draw.json --rounds 3 \
  --storage sqlite:///db/heldout51.sqlite"
