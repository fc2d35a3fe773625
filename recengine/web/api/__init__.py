"""The API's views and their plumbing.

Views: :mod:`.articles`, :mod:`.users`, :mod:`.overrides`, :mod:`.feedback`, :mod:`.health`,
each added through :mod:`.routing` (key check, JSON parsing, validation, documentation).
Plumbing: :mod:`.auth` (keys, the JSON provider), :mod:`.paths` (ids in paths), :mod:`.errors`
(the one place with HTTP codes, and the one JSON error formatter), :mod:`.cors`, and
:mod:`.answers` (ETags, 304, the worker's cache of computed answers). Views import
``routing``, which imports ``auth``, ``errors`` and ``paths``.
"""
