"""``python -m axon.tools.bench``: the same as ``axon bench``."""

from .command import main

raise SystemExit(main())
