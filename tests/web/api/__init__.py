"""Tests of the API's views on both databases."""
