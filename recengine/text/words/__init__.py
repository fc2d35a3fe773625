"""Clean text -> words -> term ids and counts: what the related lists' vectors are built from.

* :mod:`.tokenize`: the :class:`~recengine.text.words.tokenize.Tokenizer` (jieba or rjieba
  segmentation, part-of-speech filter, stopwords), built once by ``build_tokenizer``;
* :mod:`.dictionary`: jieba's dictionary as the part-of-speech table, parsed once per machine
  and cached on disk;
* :mod:`.vocabulary`: raw words -> term ids -> per-text counts, with its compiled formulation in
  :mod:`.count_kernels` (numba, rented once it pays);
* :mod:`.newwords`: new-word discovery, the strings a corpus uses as words although the
  dictionary lacks them.
"""
