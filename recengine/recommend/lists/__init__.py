"""What every related list and feed shares, from candidates to items.

:mod:`.params` validates filters; :mod:`.query` is the article a related list is about;
:mod:`.blend` ranks candidates of both sources;
:mod:`.criterion` decides which candidates are one article; :mod:`.suppress` walks a ranked
list keeping one of each (:mod:`.curation`: the editors' overrides as a list sees them);
:mod:`.listing` builds items and suppressed entries from :mod:`.facts` (what is shown of
articles and their clusters: held in memory beside the index, or read from SQL);
:mod:`.explain` and :mod:`.reasons` say why an item is there, and :mod:`.page` writes a
related list's page of them (briefs, reasons, suppressed entries); :mod:`.fragment` writes a
list's items as the widget's HTML (for pages without a script and static sites).
``listing`` imports ``suppress``, which imports ``criterion`` and ``curation``.
"""
