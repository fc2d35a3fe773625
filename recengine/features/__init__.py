"""Features layer: words -> TF-IDF vectors and 64-bit fingerprints. Takes tokens, not raw text."""
