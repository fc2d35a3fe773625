"""The editors' report (``recengine report``): corpus statistics gathered from SQL, rendered as
an HTML page with PNG plots, so that nobody has to run SQL to see what the engine is doing."""
