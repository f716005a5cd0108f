#!/usr/bin/env bash
# Prepared at stop 66 for the next H200 session (docs/rules.md, "The next GPU runs", 0), in three calls (PART=a to c).
# The settling refit fcb2b8aa (experiments/candidates/h200-s66.yaml) passed held-out set 58 at stop 66; the session's
# device time ran out before its model steps. At every recorded step it launches other configs than the shipped
# 2b0e169f (`experiments/model_launches.py`, CPU: an x=1 r=8192 sum kernel at all five, and at llama-8192 also the
# x=8192 r=8192 one), so all five are timed before it ships.
#   a: the five model steps with fcb2b8aa (about 520 s), one step per model, so that a call the device stops keeps
#      the models it finished (validate --models resumes by model);
#   b: where they are within noise, the GPU tests with fcb2b8aa installed: test_gpu_heuristics.py,
#      test_gpu_multi_kernel.py and test_gpu_unsplit_types.py (about 300 s), then the coverage12 studies with what is
#      left (experiments/coverage12-*.yaml, 12 problems, 24 trials each, about 250 s; they resume);
#   c: test_gpu_models.py and test_gpu.py (about 450 s on a fresh machine), then what is left of the coverage12 studies.
# BUDGET must stay under what the device has left (the previous call's lease.budget_left_s less about 40 s for a
# fresh machine): stop 66's fourth call was killed at the device's limit, under a BUDGET above it.
# Pack with `bash experiments/device/pack.sh STASH experiments/candidates/h200-s66.yaml -- db/quack.sqlite
# [db/models-h200-s67.sqlite db/coverage12-*.sqlite]`.
set -u
cand=experiments/candidates/h200-s66.yaml
coverage=()
for name in coverage12-bwd-fewrows coverage12-softmax-fwd; do
  coverage+=("python3 -m inductor_tune tune experiments/$name.yaml --storage sqlite:///db/$name.sqlite --no-progress \
  2>&1 | tail -14")
done
tests () {
  echo "cp $cand heuristics/h200.yaml && python3 -m pytest -v --tb=short -m gpu -p no:cacheprovider -p no:warnings \
   -rs $2 > \$OUT/pytest-$1.log 2>&1; tail -3 \$OUT/pytest-$1.log"
}
case "${PART:-a}" in
  a) steps=()
     for model in $(echo "${MODELS:-llama-2048,llama-4096,llama-8192,gpt2-1024,gpt2-2048}" | tr , ' '); do
       steps+=("python3 -m inductor_tune validate $cand --no-progress --rounds 5 \
        --storage sqlite:///db/models-h200-s67.sqlite --models $model 2>&1 | grep -v 'Warning\|warn\|^$' | tail -8")
     done
     BUDGET=${BUDGET:-560} bash experiments/device/steps.sh "${steps[@]}" ;;
  b) BUDGET=${BUDGET:-560} bash experiments/device/steps.sh \
      "$(tests b 'tests/test_gpu_heuristics.py tests/test_gpu_multi_kernel.py tests/test_gpu_unsplit_types.py')" \
      "${coverage[@]}" ;;
  c) BUDGET=${BUDGET:-560} bash experiments/device/steps.sh "$(tests c 'tests/test_gpu_models.py tests/test_gpu.py')" \
      "${coverage[@]}" ;;
esac
