#!/bin/sh
# Runs on the destination beside a migration: kills the receiver and every
# criu process (criu swrk and the tasks it restores) at once while criu
# restores the container, after it forked the container's tasks and before
# the restore ends.
#
# That window is the restore itself (~0.4 s of criu's time under TCG): the
# receiver tells the sender RestoreOk at its end, and a receiver that dies
# after that leaves the migration in doubt, not rolled back. Polling
# criu's log from outside once took longer than the whole window on a
# loaded host, so criu is held still while this script looks: the
# receiver's criu swrk is stopped (SIGSTOP) while its log is read and runs
# on only for the 20 ms sleep between two looks. It waits on its RPC
# socket before the restore, so that costs nothing there; during the
# restore it only moves between two looks, and never the whole way from
# the fork of the tasks to their resume.

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
swrk=$(pgrep -P "$(echo $receiver | tr ' ' ,)" -f '^[^ ]*criu swrk')
[ -n "$swrk" ] || { echo "no criu swrk under the receiver $receiver" >&2; exit 1; }
i=0
while :; do
  kill -STOP "$swrk" 2>/dev/null || { echo "criu swrk $swrk ended before the restore forked" >&2; exit 1; }
  grep -q 'Forking task' "$f" 2>/dev/null && break
  kill -CONT "$swrk"
  i=$((i + 1)); [ $i -lt 30000 ] || { kill -CONT "$swrk"; echo 'never saw the restore fork' >&2; exit 1; }
  sleep 0.02
done
pids="$receiver $(pgrep -x criu)"
kill -9 $pids
echo "killed mid-restore, criu's log ends: $(tail -n 2 "$f" 2>&1)"
