"""Use cases that read: related articles, duplicates, feeds."""
