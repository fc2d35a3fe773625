"""Index layer: in-memory search structures over arrays and int64 ids (no ORM, no SQL)."""
