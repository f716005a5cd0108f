#!/usr/bin/env bash
# Prepared at stop 56 for the next H200 session (docs/rules.md, "The next GPU runs", 0). The refit 14d54925
# (experiments/candidates/h200-s56.yaml) passed held-out set 48 at stop 56; its model steps were cut by the call's
# limit and their records lost with the database's WAL (steps.sh checkpoints since). So: its models
# (`validate --models`, which now resumes a run its storage holds part of), then, with GPU_TESTS=1, the model test of
# the multi-step profile and the resume, then the best-found studies of set 48's samples (db/bestfound48.sqlite holds
# part; tune resumes) and their suites validated with 14d54925: the clean held-out score against the best found.
# Pack with `bash experiments/device/pack.sh STASH experiments/candidates/h200-s56.yaml -- db/quack.sqlite
# db/bestfound48.sqlite [db/bestfound48-large.sqlite db/models-h200-s56.sqlite]`.
set -u
cand=experiments/candidates/h200-s56.yaml; total=${BUDGET:-560}
steps=("python3 -m inductor_tune validate $cand --no-progress --models --rounds 5 \
   --storage sqlite:///db/models-h200-s56.sqlite")
[ -z "${GPU_TESTS:-}" ] || steps+=("python3 -m pytest -q -m gpu tests/test_gpu_models.py -p no:cacheprovider \
   -p no:warnings -rs > \$OUT/pytest-models.log 2>&1; tail -3 \$OUT/pytest-models.log")
BUDGET=$total bash experiments/device/steps.sh "${steps[@]}"
BUDGET=$((total - SECONDS)) bash experiments/device/bestfound.sh experiments/bestfound-set48 bestfound48 "$cand" 14d54925
