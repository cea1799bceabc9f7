"""``python -m goldset``: the ``goldset`` command."""

from goldset.labeler.cli import main

main()
