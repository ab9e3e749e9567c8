"""The code that runs inside the sandbox (core.sandbox), as files that linters, type checkers and readers see.

The sandbox starts a bare interpreter (``python -I -S -c``) with the text of these modules joined: ``confine`` and
``bootstrap`` for ``run``; ``confine``, ``processes`` and ``harness`` for ``run_many``. A line ending in ``# inlined``
(an import of a sibling module, for the reader and the linters) is left out of that text, since the sibling's text
is already in it. ``bootstrap`` and ``harness`` act only as ``__main__``, so the parent can import them (which makes
them part of the code closure a rule's stamp covers, core.modules).
"""
