#!/usr/bin/env bash
# Prepared at stop 55 for the next H100 session: the best-found studies of held-out set 10's samples
# (experiments/bestfound-h100-set10*, committed with the draw at 6ea9ccd, before any fit after stop 52) and their
# suites validated with the shipped 4153ab03 (experiments/candidates/h100-s54.yaml), which passed set 10 at stop 55:
# the H100's clean held-out score against the best found. Tune resumes; a suite whose database came back from an
# earlier call is skipped. Set 11 (seed 2051) and its samples (11011/11012) were drawn at stop 55 for the next fit.
# Pack with `bash experiments/device/pack.sh STASH experiments/candidates/h100-s54.yaml -- db/quack.sqlite
# [db/bestfound-h100-10*.sqlite]`.
set -u
bash experiments/device/bestfound.sh experiments/bestfound-h100-set10 bestfound-h100-10 \
  experiments/candidates/h100-s54.yaml 4153ab03
