#!/usr/bin/env bash
# cpu_of.sh COMMAND [ARG...]: runs COMMAND and prints its wall time and the
# CPU time of every process it started, daemons that left the process tree
# included (a FUSE daemon, a container), as "wall W s, cpu C s". Counted by
# a cgroup of its own: cgroup v1's cpuacct controller or cgroup v2's
# cpu.stat, whichever this machine mounts. As root. COMMAND's output goes to
# stdout/stderr as usual; its exit status is this script's.
set -uo pipefail
[ $# -ge 1 ] || { sed -n '2,7p' "$0"; exit 2; }
if [ -d /sys/fs/cgroup/cpuacct ]; then
    group=/sys/fs/cgroup/cpuacct/ncafs-cpu-of-$$
    usage() { awk '{print $1 / 1e9}' "$group/cpuacct.usage"; }
    parent=/sys/fs/cgroup/cpuacct
else
    group=/sys/fs/cgroup/ncafs-cpu-of-$$
    usage() { awk '/^usage_usec/ {print $2 / 1e6}' "$group/cpu.stat"; }
    parent=/sys/fs/cgroup
fi
mkdir "$group" || exit 1
started=$(date +%s.%N)
bash -c 'echo $$ > "$1/cgroup.procs"; shift; exec "$@"' _ "$group" "$@"
status=$?
ended=$(date +%s.%N)
sleep 0.5  # daemons that outlive COMMAND by a moment are counted too
cpu=$(usage)
for pid in $(cat "$group/cgroup.procs"); do echo "$pid" > "$parent/cgroup.procs"; done
rmdir "$group"
awk -v a="$started" -v b="$ended" -v c="$cpu" 'BEGIN {printf "wall %.1f s, cpu %.1f s\n", b - a, c}' >&2
exit "$status"
