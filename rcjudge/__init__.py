"""rcjudge: the application shell above ``judge``, ``models``, ``verdict`` and ``bench``.

It holds what every package shares without reaching into another one: the error
root (:mod:`rcjudge.errors`), where rcjudge keeps its files (:mod:`rcjudge.home`),
and the one command-line entry point (:mod:`rcjudge.cli`).
"""
