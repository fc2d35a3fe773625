"""Use cases that read: related articles, duplicates, reader feeds, and their live index."""
