#!/usr/bin/env bash
# Init container of every Clawfleet node pod: writes the Hazelcast seed members, as the IP addresses
# behind the headless service, to a config file the node reads (CLAWFLEET_CONFIG).
#
# Why addresses and not the service's DNS name in CLAWFLEET_CLUSTER_MEMBERS: the node pins Hazelcast to
# its own address (CLAWFLEET_CLUSTER_HOST), and Hazelcast then drops every seed host name that resolves
# to another address, so each pod would form a cluster of one (deploy/k8s/README.md).
#
# usage: cluster-seeds.sh SERVICE PORT FILE [WAIT_SECONDS]   with CLAWFLEET_CLUSTER_HOST set to this pod's IP
set -euo pipefail

service="$1"
port="$2"
file="$3"
self="${CLAWFLEET_CLUSTER_HOST:?set CLAWFLEET_CLUSTER_HOST to the pod IP (status.podIP)}"
tries="${4:-60}"

# Pods started together must see each other, or each could form a cluster of its own: wait until the
# service lists this pod (its endpoint is published) and the list stays the same for 3 s, at most $tries s.
previous="" same=0 now=""
for ((i = 0; i < tries; i++)); do
  now="$( (getent ahostsv4 "$service" || true) | awk '{ print $1 }' | sort -u | tr '\n' ' ')"
  if [[ " $now " == *" $self "* ]]; then
    if [[ "$now" == "$previous" ]]; then same=$((same + 1)); else same=0; fi
    if ((same >= 3)); then break; fi
  fi
  previous="$now"
  sleep 1
done

{
  echo "# written by cluster-seeds.sh for $self from the addresses of $service"
  echo "cluster:"
  echo "  members:"
  echo "    - \"$self:$port\""
  for address in $now; do
    if [[ "$address" != "$self" ]]; then echo "    - \"$address:$port\""; fi
  done
} > "$file"
echo "cluster-seeds: $(grep -c '^    - ' "$file") seed(s) for $self in $file (the service listed: ${now:-nothing})"
