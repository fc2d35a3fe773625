"""Storage layer: SQL rows, the source of truth. Knows rows and bytes, not numpy internals.

Repository functions take ``*, session`` and never commit: the edges own the transaction.
"""
