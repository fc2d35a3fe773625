"""The candidate index of related articles: :mod:`.segment` (rows, a forward store,
postings), :mod:`.postings` (the candidate stage over several segments), :mod:`.view` (search:
candidates, then exact cosine), and the numeric steps :mod:`.scoring` runs in numpy or
compiled (:mod:`.score_kernels`). ``view`` imports ``postings`` and ``scoring``, both import
``segment``."""
