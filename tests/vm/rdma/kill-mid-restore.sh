#!/bin/sh
# Runs on the destination beside a migration: waits until the receiver's
# criu has started the restore (its restore.log in the receiver's RAM dir
# says it forks the container's tasks; the restore of this container takes
# ~0.4 s under TCG, and test_1 holds back the commit 0.5 s more), then
# kills the receiver and every criu process (criu swrk and the tasks it
# restores) at once.

# The receiver may start after this script (a launcher agent starts it
# for each migration): wait up to 10 min for it.
i=0
until receiver=$(pgrep -f 'crx [r]eceive'); do
  i=$((i + 1)); [ $i -lt 3000 ] || { echo 'no receiver here' >&2; exit 1; }
  sleep 0.2
done
i=0
while :; do
  # the image dir of tests/vm/rdma's receivers, and crx's default
  for f in /run/crx-migrate/*/*.work/restore.log /run/crx/migrate/*/*.work/restore.log; do
    [ -e "$f" ] && break 2
  done
  i=$((i + 1)); [ $i -lt 6000 ] || { echo 'never saw the restore' >&2; exit 1; }
  sleep 0.02
done
# The log is there from the preparation on (the receiver starts criu swrk
# before the freeze, runtime/migrate/README.md "Prepared restore"); the
# restore itself has begun once criu forks the container's tasks.
i=0
until grep -q 'Forking task' "$f" 2>/dev/null; do
  i=$((i + 1)); [ $i -lt 6000 ] || { echo 'never saw the restore fork' >&2; exit 1; }
  sleep 0.02
done
pids="$receiver $(pgrep -x criu)"
kill -9 $pids
echo "killed mid-restore, criu's log ends: $(tail -n 2 "$f" 2>&1)"
