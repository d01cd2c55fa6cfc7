"""The ``mtpp`` command line: :func:`main` parses and dispatches.

``main.py`` holds the parser and the partition / certify / schedule / place / evaluate /
generate / info commands; ``batch.py`` the batch, table and plot commands;
``importer.py`` the model importer; ``train.py`` training of the learned orderers;
``output.py`` how results, notes and progress are written; ``paths.py`` the path checks
every command runs before any work.
"""

from mtpp.cli.main import main

__all__ = ["main"]
