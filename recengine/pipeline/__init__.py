"""Pipeline layer (use cases that write): ingest and reindex. Sessions are opened per batch."""
