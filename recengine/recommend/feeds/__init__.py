"""A reader's feed, the parts :mod:`recengine.recommend.feed` assembles it from.

:mod:`.interests` groups a reader's reads into interests; :mod:`.slate` assembles a feed from
their ranked lists (proportional slots, suppression, diversity); :mod:`.retention` shows and
erases a reader's history and applies ``events.retention_days``. ``slate`` imports
``interests``; ``retention`` stands alone.
"""
