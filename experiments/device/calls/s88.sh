#!/usr/bin/env bash
# Prepared at stop 87 (docs/rules.md, "The next GPU runs", 0). Reads GPU 0's name and runs that GPU's item.
#   H200: as s85.sh-s87.sh (h200-after-s84.sh).
#   H100, PART=score (the default): H100 held-out set 13 scores the stop-87 refit 715d722d
#         (experiments/candidates/h100-s87.yaml: the H100 fit list under the current method plus 108c2c1d's A/B fits;
#         db/heldout-h100-13.sqlite), once; where it passes, the model steps whose kernels it launches differently from
#         108c2c1d or that experiments/model_launches.py cannot compare (db/models-h100-s88.sqlite).
#   H100, PART=tests: GPU tests parts c and d with that file installed as heuristics/h100.yaml (candidate_parts.sh;
#         $OUT/pytest-{c,d}.log).
#   H100, PART=models: the other two steps of stop 55's five with it (db/models-h100-s88b.sqlite).
#   H100, PART=rest: the steps PART=score and PART=models time after llama-2048, as two steps of one call (s89.sh).
#   MODELS_DB names the model steps' databases (default models-h100-s88: db/models-h100-s88.sqlite and ...s88b).
#   H100, PART=coverage: as s87.sh's H100 item, set 13's best-found studies first (validated with CAND, default
#         experiments/candidates/h100-s87.yaml), then the coverage14 studies.
# Pack with `bash experiments/device/pack.sh STASH experiments/candidates/h100-s87.yaml -- db/quack.sqlite` (H200:
# `pack.sh STASH heuristics/h200.yaml experiments/mix_e2e/probe-sweep-h200.yaml -- db/quack.sqlite`); start with
# `tar xJf .carry/db.tar.xz && source .devdeps/env.sh && PART=... BUDGET=560 bash experiments/device/calls/s88.sh`.
set -u
B=${BUDGET:-560}
cand=${CAND:-experiments/candidates/h100-s87.yaml}
have=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$have" in
  "NVIDIA H200") BUDGET=$B exec bash experiments/device/calls/h200-after-s84.sh ;;
  "NVIDIA H100"*) ;;
  *) echo "s88.sh: no item for GPU 0 ($have)" >&2; exit 2 ;;
esac
models() {  # $1: the database's suffix, $2: the models
  echo "python3 -m inductor_tune validate $cand --no-progress --rounds 5 --storage sqlite:///db/${MODELS_DB:-models-h100-s88}$1.sqlite \
   --models $2 2>&1 | grep -v 'Warning\\|warn\\|^$' | tail -10"
}
case "${PART:-score}" in
  score)
    BUDGET=$B exec bash experiments/device/steps.sh \
      "python3 -m inductor_tune validate $cand --no-progress --draw experiments/heldout/h100-set13-draw.json \
       --rounds 3 --storage sqlite:///db/heldout-h100-13.sqlite 2>&1 | tail -9 | tee -a /dev/stderr | grep -qx PASS \
       && $(models "" llama-2048,llama-4096,gpt2-2048,gpt2-768-t32768)" ;;
  tests) PART=tests BUDGET=$B exec bash experiments/device/candidate_parts.sh "$cand" 13 88 ;;
  models) BUDGET=$B exec bash experiments/device/steps.sh "$(models b llama-8192,gpt2-1024)" ;;
  rest) BUDGET=$B exec bash experiments/device/steps.sh "$(models "" llama-4096,gpt2-2048,gpt2-768-t32768)" \
          "$(models b llama-8192,gpt2-1024)" ;;
  coverage)
    T0=$(date +%s)
    digest=$(python3 -c "from inductor_tune.runtime.rulefile import load; print(load('$cand').digest()[:8])")
    BUDGET=$B bash experiments/device/bestfound.sh experiments/bestfound-h100-set13 bestfound-h100-13 "$cand" "$digest"
    steps=()
    for part in welford-fwd mix-bwd; do
      steps+=("python3 -m inductor_tune tune experiments/coverage14-h100-$part.yaml --no-progress \
       --storage sqlite:///db/coverage14-h100-$part.sqlite 2>&1 | tail -14")
    done
    BUDGET=$((B - ($(date +%s) - T0))) exec bash experiments/device/steps.sh "${steps[@]}" ;;
  *) echo "s88.sh: PART=score, tests, models, rest or coverage" >&2; exit 2 ;;
esac
