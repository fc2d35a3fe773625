"""The repositories: one module per table's rows (articles, features, clusters, events,
feedback, overrides), the rows indexes are built from and follow (:mod:`.index_rows`,
:mod:`.index_source`) and the report's statistics (:mod:`.stats`). They import ``storage``'s
models; a table whose rows name articles imports :mod:`.articles`, and the indexes' rows build
on :mod:`.features` (``index_rows``) and on those (``index_source``)."""
