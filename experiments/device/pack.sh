#!/usr/bin/env bash
# Pack what a device call needs of db/ into .carry/db.tar.xz, and set db/ and the candidate files aside.
#
#   bash experiments/device/pack.sh STASH [HEURISTICS.yaml ...] [-- db/extra.sqlite ...]
#   bash experiments/device/pack.sh --restore STASH
#
# A call copies the working tree, and it must stay under 64 MiB; db/ and experiments/candidates/ are several times
# that. So the databases the named heuristic files cite (their evidence, which `validate` checks a draw against)
# and the extra ones are packed (xz shrinks SQLite about 15x), and db/ and the candidates but the named files move
# to STASH until `--restore`. Carry ".carry" (and ".devdeps") in the call.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
restore() {
  if [ -d "$1/db" ]; then rm -rf db; mv "$1/db" db; fi
  if [ -d "$1/candidates" ]; then mv "$1"/candidates/* experiments/candidates/ 2>/dev/null || true; fi
}
if [ "${1:-}" = "--restore" ]; then restore "$2"; exit 0; fi
stash=$1; shift
# A second pack while db/ is still set aside (the usual order after a call: copy its results, pack again) would
# find no database to pack; put db/ and the candidates back first.
if [ ! -d db ] && [ -d "$stash/db" ]; then
  echo "pack.sh: db/ is set aside in $stash; restoring it first" >&2
  restore "$stash"
fi
files=(); extra=()
while [ $# -gt 0 ]; do
  if [ "$1" = "--" ]; then shift; extra=("$@"); break; fi
  files+=("$1"); shift
done
dbs=$( { [ ${#files[@]} -gt 0 ] && grep -oh "db/[A-Za-z0-9_.-]*\.sqlite" "${files[@]}"; printf '%s\n' "${extra[@]}"; } \
       | grep . | sort -u)
[ -n "$dbs" ] || { echo "pack.sh: no database named" >&2; exit 2; }
mkdir -p .carry "$stash/candidates"
# shellcheck disable=SC2086
tar cf - $dbs | xz -6 -T2 > .carry/db.tar.xz
[ -d "$stash/db" ] || mv db "$stash/db"
for f in experiments/candidates/*; do
  case " ${files[*]} " in *" $f "*) ;; *) mv "$f" "$stash/candidates/" ;; esac
done
du -sh .carry/db.tar.xz
