#!/usr/bin/env bash
# Prepared at stop 88 (docs/rules.md, "The next GPU runs", 0): s88.sh's parts that are left, by GPU 0's name.
# Stop 88 spent H100 held-out set 13 on 715d722d (PASS) and timed llama-2048 with it (db/models-h100-s88.sqlite);
# nothing here scores a held-out set again.
#   H200: as s85.sh-s88.sh (h200-after-s84.sh).
#   H100, PART=models (the default): the model steps left with 715d722d (experiments/candidates/h100-s87.yaml):
#         llama-4096, gpt2-2048, gpt2-768-t32768 (db/models-h100-s89.sqlite), then llama-8192, gpt2-1024
#         (db/models-h100-s89b.sqlite), each part a step of its own (s88.sh's PART=rest).
#   H100, PART=tests: GPU tests parts c and d with that file installed as heuristics/h100.yaml ($OUT/pytest-{c,d}.log).
#   H100, PART=coverage: s88.sh's: set 13's best-found studies (validated with CAND, default that file), then the
#         coverage14 studies.
# Pack with `bash experiments/device/pack.sh STASH experiments/candidates/h100-s87.yaml heuristics/h200.yaml
# experiments/mix_e2e/probe-sweep-h200.yaml -- db/quack.sqlite` (one pack for either GPU, 15 MB at stop 88); start
# with `tar xJf .carry/db.tar.xz && source .devdeps/env.sh && PART=... BUDGET=560 bash experiments/device/calls/s89.sh`.
set -u
case "${PART:-models}" in
  models) part=rest ;;
  tests|coverage) part=$PART ;;
  *) echo "s89.sh: PART=models, tests or coverage" >&2; exit 2 ;;
esac
PART=$part MODELS_DB=models-h100-s89 exec bash experiments/device/calls/s88.sh
