"""Storage layer: SQL rows, the source of truth. Knows rows and bytes, not numpy internals.

Here: engines and sessions (:mod:`.db`), the typed models (:mod:`.models`, :mod:`.types`), the
schema's migrations (:mod:`.migrate`), the change sequence and active model (:mod:`.state`), and
how processes learn of commits (:mod:`.notify` on PostgreSQL, :mod:`.walwatch` on SQLite).
:mod:`.rows` holds one module per table's rows. Repository functions take ``*, session`` and
never commit: the edges own the transaction.
"""
