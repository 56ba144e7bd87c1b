"""The read-only views of `phalanx queue`, `share` and `explain` (PRODUCT.md §6).

`rows` turns PodGroup and Queue objects (as the API returns them, status written by the operator)
into row models and JSON, purely; `fetch` does the Kubernetes reads with the user's kubeconfig;
`render` prints tables. The CLI commands in `phalanx.cli` only wire the three together.
"""
