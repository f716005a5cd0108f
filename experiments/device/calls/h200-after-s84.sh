#!/usr/bin/env bash
# The H200 items left since stop 84 (docs/rules.md, "The next GPU runs", 0), which s85.sh, s86.sh and s87.sh run when
# GPU 0 is an H200: the fresh compile of 86f2b08c's sweeping entries' 64 training problems
# (db/mix-e2e-sweep-retime.sqlite), then set 72's best-found studies validated with 86f2b08c (bestfound.sh; what is
# left of BUDGET).
set -u
B=${BUDGET:-560}; T0=$(date +%s)
BUDGET=$B bash experiments/device/steps.sh \
  "python3 -m inductor_tune validate experiments/mix_e2e/probe-sweep-h200.yaml --no-progress \
   --draw experiments/mix_e2e/retime-s84-draw.json --rounds 3 --storage sqlite:///db/mix-e2e-sweep-retime.sqlite \
   2>&1 | tail -8"
SAMPLES=1 BUDGET=$((B - ($(date +%s) - T0))) exec bash experiments/device/candidate_parts.sh heuristics/h200.yaml 72 85
