"""``python -m goldset``, as the benchmarks and ``-X importtime`` run it."""

from goldset.labeler.cli import main

main()
