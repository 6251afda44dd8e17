"""``python -m axon ...``: the same as the ``axon`` command."""

from .cli import main

raise SystemExit(main())
