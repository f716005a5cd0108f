#!/usr/bin/env bash
# Prepared at stop 55 for the next H200 session. At the best-found samples of sets 40-47, problems Inductor split
# into two kernels outside the unsplit rule's spans carry 23 % of the gap to the best found (stop 55,
# experiments/coverage_misses.py), the worst scaled_softmax_fwd 98x33678, whose study won 2.1x kept whole as one
# persistent XBLOCK=1 kernel of 32 warps; stop 33's probe of 16 warps lost at N 32k-64k. So: the A/B of a probe that
# keeps every split reduction whole with that 32-warp config, on the same two seeded training draws of the split
# region the 16-warp probe ran (`unsplit_fit.py subset` keeps the same 67 and 65 problems for 32 warps), for
# `experiments/unsplit_fit.py fit ... --variant` beside the 16-warp variant. Then, with GPU_TESTS=1, the model test
# of the multi-step profile (stop 55: each kernel's median over 5 alternating profiled steps per variant).
# Pack with `bash experiments/device/pack.sh STASH experiments/unsplit/probe-persistent32.yaml -- db/quack.sqlite`.
set -u
probe=experiments/unsplit/probe-persistent32.yaml; v="python3 -m inductor_tune validate"
steps=()
for t in train train2; do
  [ -f db/unsplit-persistent32-$t.sqlite ] || steps+=("$v $probe --no-progress --draw \
   experiments/unsplit/$t-persistent16-draw.json --rounds 3 --storage sqlite:///db/unsplit-persistent32-$t.sqlite")
done
[ -z "${GPU_TESTS:-}" ] || steps+=("python3 -m pytest -q -m gpu tests/test_gpu_models.py -p no:cacheprovider \
   -p no:warnings -rs > \$OUT/pytest.log 2>&1; tail -3 \$OUT/pytest.log")
BUDGET=${BUDGET:-560} bash experiments/device/steps.sh "${steps[@]}"
