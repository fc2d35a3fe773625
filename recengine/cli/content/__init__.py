"""Commands that read and correct what is stored: lists, feeds, clusters, articles, readers,
overrides. Each module is one command (or two close ones: ``feed`` and ``events``) over the same
use case as its HTTP endpoint; :mod:`.listing` holds the list options ``related`` and ``feed``
share. No module here imports another command."""
