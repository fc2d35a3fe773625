"""What the near-duplicate stage reads of a clean text (``features.neardup`` decides, the index
finds candidates); every value a pure function of the text, the same in every process.

* :mod:`.compare`: what the decision compares of one article (title and body shingles, body
  characters) and its passages;
* :mod:`.shingles`: 5-character shingles as sorted ``uint64`` hashes, and the word points they
  are cut from;
* :mod:`.passages`: the few passage hashes any copy of a large part of a text shares (the
  second candidate source);
* :mod:`.shingle_kernels`: the compiled run hashes of both (numba, rented once they pay);
* :mod:`.kept`: what is compared of stored texts, kept across calls by ``(article id, seq)``;
* :mod:`.hints`: the values an ingest computed of the texts it is about to write, handed to the
  steps after the write.
"""
