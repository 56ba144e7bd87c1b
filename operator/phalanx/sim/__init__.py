"""The simulator's input side and its metrics: trace loaders, time limits, queue specs, metrics.

The discrete-event replay itself is built on the scheduling core (`phalanx.core`); this package
only turns real traces into typed records and turns completed runs into numbers, so both can be
tested without the core.
"""
