"""`python -m phalanx` runs the CLI."""

from phalanx.cli import main

main()
