#!/usr/bin/env bash
# Fit a candidate heuristic file from a fit list, as stops 45 and 46 did (docs/rules.md):
#
#   bash experiments/fits/fit.sh experiments/fits/h200-s46.txt OUT.yaml
#
# distill reads the list's databases in order (lines after its two-line header), experiments/unsplit_fit.py adds
# the unsplit rule (its kernels from the databases the first unsplit fit read,
# experiments/fits/unsplit-kernels-from.txt; its probes: the 16-warp one, and those of LIST.unsplit where it exists),
# experiments/mixtune/candidate.py the split-autotune entries, LIST.typed, where it exists, the unsplit rules keyed on
# a reduction type, and LIST.outer, where it exists, the column rules. The steps are deterministic: the same list
# and databases give the same digest, on the CPU or on a GPU machine.
set -euo pipefail
fitlist=$1; out=$2; work=$(mktemp -d)
here=$(dirname "$0")
mapfile -t dbs < <(sed 1,2d "$fitlist" | grep .)
# LIST.excused, where it exists, holds the most loss noise may excuse at an evidence shape, for the launch rules
# (distill --max-excused-loss) and the unsplit ones (unsplit_fit.py --max-loss) alike: 0 for stop 76's fit, where
# a config or an unsplit cell may read slower than Inductor's default at none of its shapes. Older lists have none.
excused=(); launch_excused=()
if [ -f "${fitlist%.txt}.excused" ]; then
  loss=$(grep -v '^#' "${fitlist%.txt}.excused" | grep . | head -1)
  excused=(--max-loss "$loss"); launch_excused=(--max-excused-loss "$loss")
fi
python3 -m inductor_tune distill "${dbs[@]}" --gpu H200 --no-folds "${launch_excused[@]}" --out "$work/launch.yaml"
persistent16=db/unsplit-persistent16-train.sqlite,db/unsplit-persistent16-train2.sqlite
variants=(--variant "experiments/unsplit/probe-persistent16.yaml=$persistent16")
# A list may bring more unsplit probes (stop 55: 32 warps), one PROBE.yaml=DB,... per line of LIST.unsplit; a cell
# takes the variant its training A/B scores best, so one that earns nowhere changes no rule. Older lists have none.
if [ -f "${fitlist%.txt}.unsplit" ]; then
  while read -r line; do variants+=(--variant "$line"); done < <(grep -v '^#' "${fitlist%.txt}.unsplit" | grep .)
fi
python3 experiments/unsplit_fit.py fit "$work/launch.yaml" --evidence db/unsplit-train.sqlite,db/unsplit-train2.sqlite \
  "${variants[@]}" --kernels-from "$(paste -sd, "$here/unsplit-kernels-from.txt")" "${excused[@]}" \
  --out "$work/unsplit.yaml"
python3 experiments/mixtune/candidate.py "$work/unsplit.yaml" experiments/mixtune/probe-up-m5.yaml "$out" \
  db/mixtune-probe-up-m5.sqlite db/mixtune2-probe-up-m5.sqlite db/mixtune3-probe-up-m5.sqlite
# Unsplit rules keyed on a reduction type (stop 60), one line of LIST.typed each: TYPE EVIDENCE-DBS PROBE.yaml=DB,...
# (the 047ab3bb method: its kernels from the list's own databases). Lists before stop 62 have none.
if [ -f "${fitlist%.txt}.typed" ]; then
  while read -r rtype evidence variant; do
    python3 experiments/unsplit_fit.py fit "$out" --reduction-type "$rtype" --evidence "$evidence" \
      --variant "$variant" --kernels-from "$(printf '%s\n' "${dbs[@]}" | paste -sd,)" "${excused[@]}" \
      --out "$work/typed.yaml"
    mv "$work/typed.yaml" "$out"
  done < <(grep -v '^#' "${fitlist%.txt}.typed" | grep .)
fi
# Column rules (stop 69: unsplit column reductions of few rows), LIST.outer names the training A/B databases of
# experiments/unsplit/probe-outer.yaml, one a line. fit.sh adds them last, as f8e76f08 (stop 71) was made on top
# of h200-s67.txt's fit. Lists before stop 72 have none.
if [ -f "${fitlist%.txt}.outer" ]; then
  evidence=$(grep -v '^#' "${fitlist%.txt}.outer" | grep . | paste -sd,)
  python3 experiments/unsplit_fit.py fit "$out" --outer --evidence "$evidence" "${excused[@]}" --out "$work/outer.yaml"
  mv "$work/outer.yaml" "$out"
fi
python3 -c "from inductor_tune.runtime.rulefile import load; h = load('$out'); \
print('$out', h.digest()[:8], len(h.rules), 'rules', sum(1 for r in h.rules if r.config), 'with a config')"
rm -rf "$work"
