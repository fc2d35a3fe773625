"""Tests of recengine.text: cleaning, boilerplate, tokenizers, shingles, new words."""
