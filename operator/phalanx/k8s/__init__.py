"""The thin Kubernetes adapter around the pure core: watch, decide, bind, report."""
