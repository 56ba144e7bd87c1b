#!/usr/bin/env bash
# Turn the workers of a kind cluster into fake GPU nodes of a shape: the same topology and GPU
# labels as the local control plane, and `nvidia.com/gpu` advertised by patching node status
# capacity (the way the Kubernetes docs advertise extended resources). Re-runnable: a kubelet
# restart may reset the capacity, so run it again after one.
#
#   deploy/kind/apply-shape.sh [SHAPE]     (default: kind; needs kubectl pointed at the cluster)
set -euo pipefail

shape="${1:-kind}"
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
phalanx="${PHALANX:-$repo/.venv/bin/phalanx}"
[ -x "$phalanx" ] || phalanx="phalanx"

mapfile -t workers < <(kubectl get nodes -l '!node-role.kubernetes.io/control-plane' \
  -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort)
mapfile -t lines < <("$phalanx" dev-cluster render --shape "$shape" -o lines)

if [ "${#workers[@]}" -lt "${#lines[@]}" ]; then
  echo "shape $shape has ${#lines[@]} nodes but the cluster has ${#workers[@]} workers:" \
    "add workers to the kind config or pick a smaller shape" >&2
  exit 1
fi

for i in "${!lines[@]}"; do
  node="${workers[$i]}"
  read -r gpus taints labels <<<"${lines[$i]}"
  # shellcheck disable=SC2086  # labels is a space-separated list of key=value words
  kubectl label node "$node" --overwrite $labels >/dev/null
  if [ "$taints" != "-" ]; then
    # shellcheck disable=SC2086
    kubectl taint node "$node" --overwrite ${taints//,/ } >/dev/null
  fi
  kubectl patch node "$node" --subresource=status --type=merge \
    -p "{\"status\":{\"capacity\":{\"nvidia.com/gpu\":\"$gpus\"}}}" >/dev/null
  echo "$node: $gpus GPUs, $labels"
done
