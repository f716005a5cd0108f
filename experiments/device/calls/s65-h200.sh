#!/usr/bin/env bash
# Prepared at stop 64 for the next H200 session (docs/rules.md, "The next GPU runs", 0), in two calls (PART=a, b).
# The refit 2b0e169f (experiments/candidates/h200-s64.yaml: fill 25 and span round 29 added to aa79734d's list) is
# being scored once on held-out set 57 (seed 2089, drawn at stop 63 before its fit); stop 64's budget stopped the gate
# at 273 of 300 problems, which db/heldout57.sqlite keeps, and `validate --draw` resumes it. At every kernel of the
# five recorded model steps it launches aa79734d's configs (experiments/model_launches.py, CPU).
#   a: the rest of set 57 (about 60 s); set 57's best-found studies (the large one resumes) and both suites validated
#      with 2b0e169f, its clean best found (about 200 s); then, where set 57 passed, the GPU tests of
#      test_gpu_heuristics.py, test_gpu_multi_kernel.py and test_gpu_unsplit_types.py with it installed (about 300 s);
#      where set 57 failed, the hull round (s65-h200-b.sh) takes the rest of the call instead;
#   b: where set 57 passed (SHIP=1), the GPU tests of test_gpu_models.py and test_gpu.py (about 450 s on a fresh
#      machine).
# Pack with `bash experiments/device/pack.sh STASH experiments/candidates/h200-s64.yaml -- db/quack.sqlite
# db/heldout57.sqlite db/bestfound57.sqlite db/bestfound57-large.sqlite`, and for PART=a also the databases
# s65-h200-b.sh's header names.
set -u
cand=experiments/candidates/h200-s64.yaml
installed="cp $cand heuristics/h200.yaml && python3 -m pytest -v --tb=short -m gpu -p no:cacheprovider \
  -p no:warnings -rs"
case "${PART:-a}" in
  a) total=${BUDGET:-560}
     BUDGET=120 bash experiments/device/steps.sh \
      "python3 -m inductor_tune validate $cand --no-progress --draw experiments/heldout/set57-draw.json --rounds 3 \
      --storage sqlite:///db/heldout57.sqlite 2>&1 | grep -v 'Warning\|warn\|^$' | tail -12; \
      [ \${PIPESTATUS[0]} -eq 0 ] && touch /tmp/set57-passed"
     BUDGET=$((total - SECONDS - 300)) bash experiments/device/bestfound.sh experiments/bestfound-set57 bestfound57 \
      "$cand" 2b0e169f
     if [ -f /tmp/set57-passed ]; then
       BUDGET=$((total - SECONDS)) bash experiments/device/steps.sh \
        "$installed tests/test_gpu_heuristics.py tests/test_gpu_multi_kernel.py tests/test_gpu_unsplit_types.py \
        > \$OUT/pytest-a.log 2>&1; tail -3 \$OUT/pytest-a.log"
     else
       BUDGET=$((total - SECONDS)) bash experiments/device/calls/s65-h200-b.sh
     fi ;;
  b) [ -n "${SHIP:-}" ] && BUDGET=${BUDGET:-560} bash experiments/device/steps.sh \
      "$installed tests/test_gpu_models.py tests/test_gpu.py > \$OUT/pytest-b.log 2>&1; tail -3 \$OUT/pytest-b.log" ;;
esac
