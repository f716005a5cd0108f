#!/usr/bin/env bash
# Best found at a held-out set's samples on the device, resumable (docs/rules.md):
#
#   bash experiments/device/bestfound.sh SAMPLES STEM CANDIDATE.yaml DIGEST
#
# e.g. `... experiments/bestfound-h100-set10 bestfound-h100-10 experiments/candidates/h100-s54.yaml 4153ab03`: the
# studies of SAMPLES/problems.yaml and SAMPLES-large/problems.yaml (db/STEM.sqlite, db/STEM-large.sqlite; tune
# resumes), then each suite validated with CANDIDATE against them (db/STEM-validate-DIGEST.sqlite and
# db/STEM-large-validate-DIGEST.sqlite; a database that came back from an earlier call is not made again).
set -u
samples=$1; stem=$2; cand=$3; digest=$4
steps=()
for part in "" -large; do
  steps+=("python3 -m inductor_tune tune $samples$part/problems.yaml --storage sqlite:///db/$stem$part.sqlite \
   --no-progress")
done
for part in "" -large; do
  [ -f db/$stem$part-validate-$digest.sqlite ] || steps+=("python3 -m inductor_tune validate $cand --suite \
   $samples$part/problems.yaml --db db/$stem$part.sqlite --no-progress \
   --storage sqlite:///db/$stem$part-validate-$digest.sqlite")
done
BUDGET=${BUDGET:-560} bash experiments/device/steps.sh "${steps[@]}"
