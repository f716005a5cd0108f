#!/usr/bin/env bash
# Prepared at stop 63 for the next H200 session (docs/rules.md, "The next GPU runs", 0). aa79734d
# (experiments/candidates/h200-s62.yaml, shipped at stop 63 as heuristics/h200.yaml) passed held-out set 56 and all
# GPU tests; llama-2048, gpt2-1024 and gpt2-2048 are within noise with it. The device time ran out before the other
# two model steps, at whose kernels it launches the configs of 047ab3bb (experiments/model_launches.py), whose steps
# there were within noise. This times them with aa79734d (`validate --models` resumes db/models-h200-s63.sqlite;
# about 250 s), then studies set 55's best-found samples, drawn before aa79734d's fit, and validates their suites with
# it, its clean score (experiments/device/bestfound.sh, about 310 s). Everything resumes: run it again for what a
# call left.
# Pack with `bash experiments/device/pack.sh STASH experiments/candidates/h200-s62.yaml -- db/quack.sqlite
# db/models-h200-s63.sqlite [db/bestfound55.sqlite db/bestfound55-large.sqlite]`.
set -u
cand=experiments/candidates/h200-s62.yaml; total=${BUDGET:-560}
digest=$(python3 -c "from inductor_tune.runtime.rulefile import load; print(load('$cand').digest()[:8])")
BUDGET=$total bash experiments/device/steps.sh "python3 -m inductor_tune validate $cand --no-progress --rounds 5 \
  --storage sqlite:///db/models-h200-s63.sqlite --models llama-4096,llama-8192 2>&1 | grep -v 'Warning\|warn\|^$' \
  | tail -12"
BUDGET=$((total - SECONDS)) bash experiments/device/bestfound.sh experiments/bestfound-set55 bestfound55 "$cand" \
  "$digest"
