"""The code sandbox: the host side (``sandbox``: ``run``, ``run_many``, ``check``; ``box``: the layers, launcher and
scratch directory of one sandbox; ``batch``: ``run_many``'s batches) and the code that runs inside it, as files that
linters, type checkers and readers see.

The sandbox starts a bare interpreter (``python -I -S -c``) with the text of these modules joined: ``confine`` and
``bootstrap`` for ``run``; ``confine``, ``processes`` and ``harness`` for ``run_many``. A line ending in ``# inlined``
(an import of a sibling module, for the reader and the linters) is left out of that text, since the sibling's text
is already in it. ``bootstrap`` and ``harness`` act only as ``__main__``, so the parent can import them (which makes
them part of the code closure a rule's stamp covers, core.modules).
"""
