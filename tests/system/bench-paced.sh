#!/bin/bash
# bench-paced.sh RAILMON SRCDIR [SECONDS] - live acquisition's CPU on the
# host path, this build against an older one side by side: two `railmon
# run` at the same time on the same trace paced at real time
# (bench-pipeline's live board: emu-regional's two CAN buses from a trace
# of gen-load-trace.py at 70% load, about 5,000 frames/s, DBC decoding,
# the log), SECONDS (default 40) of it.  CPU seconds (utime + stime) and
# context switches (voluntary + not, every thread) from /proc over the
# same window; the table gives CPU per 1000 frames/s and the ratio to the
# older build.  The older build is $RAILMON_BEFORE; without it the build
# runs against itself, which shows the noise of the two-process method.
# Both run at the same time so the machine's load is the same for both.
set -euo pipefail
NEW=$(realpath "$1") SRC=$(realpath "$2") SECS=${3:-40}
OLD=$(realpath "${RAILMON_BEFORE:-$1}")
T=$(mktemp -d /var/tmp/railmon-bench-paced.XXXXXX)
trap 'kill ${pid[new]:-} ${pid[old]:-} 2>/dev/null; rm -rf "$T"' EXIT
declare -A pid
/usr/bin/python3 $SRC/tests/system/gen-load-trace.py $((SECS+10)) 0.7 $T/load.log > /dev/null
/usr/bin/python3 "$SRC/tests/system/live-board.py" "$SRC" "$T/load.log" "$T/live.ini"
for n in new old; do b=NEW; [ $n = old ] && b=OLD
  "${!b}" run --board $T/live.ini --data $T/$n --duration $((SECS+4)) 2> $T/$n.err & pid[$n]=$!; done
sleep 2
stat() { # pid -> "ticks ctxsw"
  local t=$(awk '{print $14+$15}' /proc/$1/stat) c=0
  for s in /proc/$1/task/*/status; do c=$((c + $(awk '/^voluntary_ctxt|^nonvoluntary_ctxt/{s+=$2}END{print s}' $s))); done
  echo "$t $c"; }
declare -A a b
for n in new old; do a[$n]=$(stat ${pid[$n]}); done
sleep $SECS
for n in new old; do b[$n]=$(stat ${pid[$n]}); done
wait
tck=$(getconf CLK_TCK)
echo "live, paced trace, $SECS s: $NEW against ${OLD}"
printf '%-5s %10s %8s %12s %14s %8s\n' build frames "CPU s" "ctx sw/s" "% core/kfps" "vs old"
for n in old new; do
  set -- ${a[$n]} ${b[$n]}
  in=$(grep -o '[a-z]*: [0-9]* in' $T/$n.err | awk '{s += $2} END {print s}')
  cpu=$(echo "($3-$1)/$tck" | bc -l); rate=$(echo "$in/($SECS+4)" | bc -l)
  pct=$(echo "$cpu/$SECS*100/($rate/1000)" | bc -l)
  eval "pct_$n=$pct"
  printf '%-5s %10d %8.2f %12.0f %14.3f %7.2fx\n' $n $in $cpu $(echo "($4-$2)/$SECS" | bc -l) $pct $(echo "$pct/${pct_old}" | bc -l)
done
