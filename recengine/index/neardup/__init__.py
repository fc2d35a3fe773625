"""Near-duplicate candidates: :mod:`.radius` (every fingerprint within Hamming k, exact, by
the table layout of :mod:`.layout`), :mod:`.blocks` (the same over every article in rank
order, compiled in :mod:`.block_kernels`, for the reindex's leader pass), :mod:`.passages`
(articles sharing a passage hash) and :mod:`.candidates` (both sources as one answer)."""
