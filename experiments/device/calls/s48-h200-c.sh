#!/usr/bin/env bash
# Stop 48, third H200 call (docs/rules.md "Stop 48"): set 42's regressions timed again in 5 fresh rounds with the
# shipped ae00ae0e, the refit 32fa782e and a diagnostic variant; then the rest of set 42's best-found studies and
# both files against them.
#   tar xJf .carry/db.tar.xz && source .devdeps/env.sh && bash experiments/device/calls/s48-h200-c.sh
set -u
ship=heuristics/h200.yaml; cand=experiments/candidates/h200-s48.yaml
diag=experiments/candidates/diag-s48-split-w8.yaml; rt=experiments/retime-set42/problems.yaml
bf=experiments/bestfound-set42; bfl=experiments/bestfound-set42-large
v="python3 -m inductor_tune validate"
BUDGET=${BUDGET:-570} bash experiments/device/steps.sh \
  "$v $ship --suite $rt --rounds 5 --no-progress --storage sqlite:///db/retime42-ae00ae0e.sqlite" \
  "$v $cand --suite $rt --rounds 5 --no-progress --storage sqlite:///db/retime42-32fa782e.sqlite" \
  "$v $diag --suite $rt --rounds 5 --no-progress --storage sqlite:///db/retime42-diag-86283cac.sqlite" \
  "python3 -m inductor_tune tune $bfl/problems.yaml --storage sqlite:///db/bestfound42-large.sqlite --no-progress" \
  "$v $ship --suite $bf/problems.yaml --db db/bestfound42.sqlite --no-progress \
   --storage sqlite:///db/bestfound42-validate-ae00ae0e.sqlite" \
  "$v $cand --suite $bf/problems.yaml --db db/bestfound42.sqlite --no-progress \
   --storage sqlite:///db/bestfound42-validate-32fa782e.sqlite" \
  "$v $ship --suite $bfl/problems.yaml --db db/bestfound42-large.sqlite --no-progress \
   --storage sqlite:///db/bestfound42-large-validate-ae00ae0e.sqlite" \
  "$v $cand --suite $bfl/problems.yaml --db db/bestfound42-large.sqlite --no-progress \
   --storage sqlite:///db/bestfound42-large-validate-32fa782e.sqlite"
