"""`make demo`: the main job on a fresh machine.

Builds the control plane if needed, brings up the local cluster with the `small` shape (or reuses
one that is already up), and shows what the scheduler will see: every fake GPU node with its
spine, leaf and GPUs. Later stages of the project extend this with the operator and example gangs.
"""

from __future__ import annotations

import os

from rich.console import Console
from rich.table import Table

from phalanx.devcluster.cluster import describe_nodes, kubeconfig_path, status, up
from phalanx.devcluster.shapes import load_shape


def main() -> None:
    console = Console()
    shape = os.environ.get("PHALANX_DEMO_SHAPE", "small")
    st = status()
    if st.up:
        console.print(f"reusing the dev cluster that is up (shape {st.shape})")
        kubeconfig = kubeconfig_path()
    else:
        kubeconfig = up(load_shape(shape), log=lambda m: console.print(f"[dim]{m}[/dim]"))
    rows = describe_nodes(kubeconfig)
    table = Table("NODE", "SPINE", "LEAF", "GPUS", "PRODUCT", "STATUS", title="fake GPU nodes")
    for r in rows:
        table.add_row(r["name"], r["spine"], r["leaf"], r["gpus"], r["product"], r["ready"])
    console.print(table)
    gpus = sum(int(r["gpus"]) for r in rows)
    console.print(f"{len(rows)} nodes, {gpus} GPUs")
    print(f"KUBECONFIG={kubeconfig}")
    console.print("stop it with: make down")


if __name__ == "__main__":
    main()
