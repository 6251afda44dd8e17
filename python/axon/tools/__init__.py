"""The measurement tools behind ``axon topo``, ``axon doctor``, ``axon bench`` and ``axon plot``.

Each module exposes ``add_subcommand(subparsers)``, which adds its subparser with a ``handler``
(see ``axon.cli``). They must not import the compiled extension at module import time: the
command line has to start (and print help) where the extension or a GPU is missing.
"""
