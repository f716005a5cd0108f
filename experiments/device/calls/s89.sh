#!/usr/bin/env bash
# Prepared at stop 88 (docs/rules.md, "The next GPU runs", 0). Reads GPU 0's name and runs that GPU's item.
# Stop 88 spent H100 held-out set 13 on 715d722d (PASS) and timed llama-2048 with it (db/models-h100-s88.sqlite);
# nothing here scores a held-out set again.
#   H200: as s85.sh-s88.sh (h200-after-s84.sh).
#   H100, PART=models (the default): the model steps left of s88.sh's two parts with 715d722d
#         (experiments/candidates/h100-s87.yaml): llama-4096, gpt2-2048, gpt2-768-t32768 (db/models-h100-s89.sqlite),
#         then llama-8192, gpt2-1024 (db/models-h100-s89b.sqlite), each part a step of its own.
#   H100, PART=tests: GPU tests parts c and d with that file installed as heuristics/h100.yaml (candidate_parts.sh;
#         $OUT/pytest-{c,d}.log).
#   H100, PART=coverage: as s88.sh's, set 13's best-found studies (validated with CAND, default
#         experiments/candidates/h100-s87.yaml), then the coverage14 studies.
# Pack with `bash experiments/device/pack.sh STASH experiments/candidates/h100-s87.yaml heuristics/h200.yaml
# experiments/mix_e2e/probe-sweep-h200.yaml -- db/quack.sqlite` (one pack for either GPU, 15 MB at stop 88); start
# with `tar xJf .carry/db.tar.xz && source .devdeps/env.sh && PART=... BUDGET=560 bash experiments/device/calls/s89.sh`.
set -u
B=${BUDGET:-560}
cand=${CAND:-experiments/candidates/h100-s87.yaml}
have=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$have" in
  "NVIDIA H200") BUDGET=$B exec bash experiments/device/calls/h200-after-s84.sh ;;
  "NVIDIA H100"*) ;;
  *) echo "s89.sh: no item for GPU 0 ($have)" >&2; exit 2 ;;
esac
models() {  # $1: the database's suffix, $2: the models
  echo "python3 -m inductor_tune validate $cand --no-progress --rounds 5 --storage sqlite:///db/models-h100-s89$1.sqlite \
   --models $2 2>&1 | grep -v 'Warning\\|warn\\|^$' | tail -10"
}
case "${PART:-models}" in
  models) BUDGET=$B exec bash experiments/device/steps.sh "$(models "" llama-4096,gpt2-2048,gpt2-768-t32768)" \
            "$(models b llama-8192,gpt2-1024)" ;;
  tests) PART=tests BUDGET=$B exec bash experiments/device/candidate_parts.sh "$cand" 13 89 ;;
  coverage) PART=coverage BUDGET=$B CAND=$cand exec bash experiments/device/calls/s88.sh ;;
  *) echo "s89.sh: PART=models, tests or coverage" >&2; exit 2 ;;
esac
