#!/usr/bin/env bash
# Fit an H100 candidate from a fit list with the current method (stop 87):
#
#   bash experiments/fits/fit-h100.sh experiments/fits/h100-s52.txt OUT.yaml
#
# The H100 has few studies of its own: `distill --gpu H100 --candidates-from H200` fits the list's H100 crossmeasure
# records inside the frames of the H200 studies it names (docs/rules.md, "A GPU without studies"). On top come the
# H100's own A/B fits, as 108c2c1d (shipped at stop 86) had them: the sweeping end-to-end split-autotune entries of
# the H100's four training records and their fresh compile (stop 85), and the unsplit cells of the H100's unsplit
# probe that win at every problem of its four records (stop 86; none does). The steps are deterministic: the same
# list and databases give the same digest, on the CPU or on a GPU machine.
set -euo pipefail
fitlist=$1; out=$2; work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mapfile -t dbs < <(sed 1,2d "$fitlist" | grep .)
python3 -m inductor_tune distill "${dbs[@]}" --gpu H100 --candidates-from H200 --no-folds --out "$work/launch.yaml"
e2e=db/mix-e2e-sweep-h100-train.sqlite,db/mix-e2e-sweep-h100-train2.sqlite,db/mix-e2e-sweep-h100-train3.sqlite
e2e=$e2e,db/mix-e2e-sweep-h100-train4.sqlite,db/mix-e2e-sweep-h100-retime.sqlite
python3 experiments/mix_e2e_fit.py fit "$work/launch.yaml" --sweep --evidence "$e2e" --out "$work/e2e.yaml" \
  | grep -v "Inductor's split kept"
unsplit=db/unsplit-h100-train.sqlite,db/unsplit-h100-train2.sqlite,db/unsplit-h100-retime.sqlite
unsplit=$unsplit,db/unsplit-h100-train3.sqlite
python3 experiments/unsplit_fit.py fit "$work/e2e.yaml" --every-win --evidence "$unsplit" --out "$out" \
  | grep -v "Inductor's split kept"
