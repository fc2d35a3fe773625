"""The HTTP contract as pydantic models: they validate requests and generate ``/openapi.json``.

:mod:`.core` (articles, related lists, duplicates, feeds, health, and ``build_models``, which
sizes them from settings), :mod:`.editorial` (overrides and reader feedback; imports ``core``)
and :mod:`.readers` (a reader's data); :mod:`.fragment`: the query of a list's HTML fragment.
"""
