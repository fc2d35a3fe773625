"""What a browser loads: the demo page (:mod:`.demo`), the widget's script and stylesheet and
the OpenAPI document (:mod:`.views`; :mod:`.assets` serves the script and stylesheet without
their comments), and the static files and templates beside them."""
