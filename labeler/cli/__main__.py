"""``python -m labeler.cli``, as the benchmarks and ``-X importtime`` run it."""

from labeler.cli import main

main()
