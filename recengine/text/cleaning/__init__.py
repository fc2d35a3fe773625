"""Raw text -> clean text, and what a reader is shown of it. Regular expressions throughout:
cleaning has to cost little next to tokenization.

* :mod:`.clean`: HTML or plain text to clean, NFKC-normalised lines (and the readable text a
  person is shown);
* :mod:`.boilerplate`: the repost header and footer lines and portal disclaimers stripped
  before tokenization and comparison;
* :mod:`.quotes`: quoted reply text (``>`` lines, top-posted originals, BBCode and BBS quotes),
  which the near-duplicate decision reads a text without;
* :mod:`.excerpt`: a related-articles card's first image and summary;
* :mod:`.paragraphs`: readable text cut into paragraphs to show a person.
"""
