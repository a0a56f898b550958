# shellcheck shell=bash
# ports.sh: loopback ports for the listeners the scripts start (HBase,
# OpenTSDB, adapters, Prometheus, the Compose stack). Sourced, not run.
#
# Ports are picked below the kernel's ephemeral range, whose ports outgoing
# connections take as their own: a port free to connect to may still be
# held by one, and a listener then fails to bind it (a make bench run lost
# its adapter so). Where that range starts too low to leave room, the old
# range 20000-49999 is used.

ports_lo=20000
ports_hi=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2> /dev/null || echo 32768)
((ports_hi > ports_lo + 1000)) || ports_hi=50000
ports_picked=""

# port_free PORT: true when nothing on 127.0.0.1 accepts a connection on PORT.
port_free() { ! (exec 3<> "/dev/tcp/127.0.0.1/$1") 2> /dev/null; }

# pick_port VAR: sets VAR to a free port that this shell has not picked
# before (in this shell, not a subshell, so that the next pick knows it).
pick_port() {
  local p
  for _ in $(seq 1 200); do
    p=$((ports_lo + RANDOM % (ports_hi - ports_lo)))
    if port_free "$p" && [[ " $ports_picked " != *" $p "* ]]; then
      ports_picked="$ports_picked $p"
      printf -v "$1" '%s' "$p"
      return 0
    fi
  done
  echo "no free loopback port found in $ports_lo-$ports_hi" >&2
  return 1
}
