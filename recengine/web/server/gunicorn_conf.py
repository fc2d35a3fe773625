"""A gunicorn configuration module: ``gunicorn -c python:recengine.web.server.gunicorn_conf APP``.

gunicorn reads this module's global names as its settings; they are
:func:`recengine.web.server.settings.options` of the settings from the environment (``RECENGINE_*``,
``RECENGINE_CONFIG``), the same the app reads. Importing it is loading configuration: nothing
else imports it.
"""

from __future__ import annotations

from recengine.config import load_settings
from recengine.web.server.settings import options

globals().update(options(load_settings()))
# gunicorn >= 25 opens a control socket in $HOME by default (ignored by older versions).
control_socket_disable = True
