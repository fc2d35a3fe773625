"""One HTTP request on the worker's event loop, from bytes to an answer.

:mod:`.front` reads a request whole (deadlines, sizes); :mod:`.parsing` decides what it is
(gunicorn's parser, once, for every path); :mod:`.admission` and :mod:`.slots` shed what waited
too long; :mod:`.hits` (cached answers) and :mod:`.beacons` (feedback) answer on the loop;
:mod:`.dispatch` runs the app on a thread, under a :mod:`.deadline`. ``parsing``, ``dispatch``,
``hits`` and ``beacons`` import ``front``; ``hits`` and ``beacons`` return what ``dispatch``
returns; ``admission``, ``slots`` and ``deadline`` import nothing here.
"""
