"""Tests of the HTTP contract: bad input, OpenAPI, schemathesis, any request."""
