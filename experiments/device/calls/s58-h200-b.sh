#!/usr/bin/env bash
# Stop 58, after s58-h200-a.sh, where h200-s57-mk3.yaml (6600b4f6) failed set 49 with 10 regressions, every one at a
# multi-kernel entry and at kernels of 5-33 us: Inductor's MultiKernel picks, at those problems and four it won, with
# its DEBUG lines (what it timed for each kernel; experiments/multikernel/probe-set49.yaml, a diagnostic on spent
# data), then set 49's best-found suites validated with the file, its clean score against the best found (the
# studies ran at stop 57 and were not read). Nothing is shipped.
# Pack with `bash experiments/device/pack.sh STASH heuristics/h200.yaml experiments/candidates/h200-s57-mk3.yaml --
# db/quack.sqlite db/bestfound49.sqlite db/bestfound49-large.sqlite`.
set -u
cand=experiments/candidates/h200-s57-mk3.yaml; total=${BUDGET:-560}
digest=$(python3 -c "from inductor_tune.runtime.rulefile import load; print(load('$cand').digest()[:8])")
BUDGET=$total bash experiments/device/steps.sh "TORCH_LOGS=+torch._inductor.codegen.multi_kernel python3 -m \
  inductor_tune validate $cand --suite experiments/multikernel/probe-set49.yaml --no-progress --rounds 3 \
  --storage sqlite:///db/multikernel-probe49.sqlite 2> \$OUT/picks.log | grep -v Warning | tail -22; \
  grep -c 'pick' \$OUT/picks.log"
BUDGET=$((total - SECONDS)) bash experiments/device/bestfound.sh experiments/bestfound-set49 bestfound49 "$cand" \
  "$digest"
