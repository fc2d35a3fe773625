"""Text layer: raw article text -> clean text -> words, and what the near-duplicate decision
compares of a text. Knows nothing of vectors or storage; nothing is loaded at import time.

* :mod:`~recengine.text.cleaning`: HTML or plain text to clean text, the repost boilerplate and
  quoted replies left out, and what a reader is shown of it (a card's image and summary, a
  page's paragraphs);
* :mod:`~recengine.text.words`: clean text -> words (jieba, its part-of-speech table cached on
  disk, stopwords) -> term ids and counts, and the words a corpus uses that the dictionary lacks;
* :mod:`~recengine.text.neardup`: what the near-duplicate stage reads of a clean text: its
  shingles and passage hashes, and the holders that keep them between the steps that need them.

``neardup`` reads ``cleaning`` (it compares a text without boilerplate and quoted replies);
``words`` and ``cleaning`` know nothing of each other (``pyproject.toml``'s import contracts).
"""
