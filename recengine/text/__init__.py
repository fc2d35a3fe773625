"""Text layer: raw article text -> clean text -> words. Knows nothing of vectors or storage."""
