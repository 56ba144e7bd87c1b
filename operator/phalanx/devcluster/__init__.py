"""The local control plane: binaries built from Go modules, fake GPU nodes from shape files."""
