"""The command line's tools: ``axon run`` (launcher, emulated_nodes), ``axon topo``, ``axon doctor``,
``axon bench`` (with the comparison peers it runs), ``axon plot``, ``axon space serve`` and ``axon config``.

The package root holds the API a program imports (``import axon``); everything the ``axon`` command
runs lives here, beside the pieces the tools share (cli_parser, topology). Each command's module
exposes ``add_subcommand(subparsers)``, which adds its subparser with a ``handler`` (see
``axon.cli``); ``axon run``'s parser is in ``axon.cli`` itself, over ``launcher.run``. They must not
import the compiled extension at module import time: the command line has to start (and print
help) where the extension or a GPU is missing.
"""
