"""What a browser loads: the demo page (:mod:`.demo`), the widget script and the OpenAPI
document (:mod:`.views`), and the static files and templates beside them."""
