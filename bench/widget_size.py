"""What the widget costs a page to download: the gzipped bytes of ``/widget.js`` and
``/widget.css`` as the service sends them (comments stripped, ``web.pages.assets``), beside the
source files gzipped as they are (the reference: what serving the sources would cost).

Usage::

    python -m bench.widget_size

Sizes are gzip at level 6 (what nginx and most CDNs use by default) and 9; the aim (issue 48)
is JS + CSS <= 8 KB gzipped together. Nothing is asserted: the figure is printed.
"""

from __future__ import annotations

import gzip
import tempfile
from pathlib import Path

from recengine.config import load_settings
from recengine.storage.db import make_engine
from recengine.storage.migrate import upgrade
from recengine.web import create_app

AIM = 8 * 1024
STATIC = Path(__file__).resolve().parent.parent / "recengine" / "web" / "pages" / "static"


def gz(data: bytes, level: int) -> int:
    return len(gzip.compress(data, compresslevel=level, mtime=0))


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        settings = load_settings({"data_dir": folder})
        upgrade(make_engine(settings.resolved_database_url))
        app = create_app(settings)
        client = app.test_client()
        served = {name: client.get(f"/{name}").data for name in ("widget.js", "widget.css")}
    print(f"{'file':<12}{'served':>9}{'gzip -6':>9}{'gzip -9':>9}   {'source gzip -6':>14}")
    totals = [0, 0, 0, 0]
    for name, body in served.items():
        source = (STATIC / name).read_bytes()
        row = [len(body), gz(body, 6), gz(body, 9), gz(source, 6)]
        totals = [t + r for t, r in zip(totals, row, strict=True)]
        print(f"{name:<12}{row[0]:>9,}{row[1]:>9,}{row[2]:>9,}   {row[3]:>14,}")
    print(f"{'together':<12}{totals[0]:>9,}{totals[1]:>9,}{totals[2]:>9,}   {totals[3]:>14,}")
    verdict = "within" if totals[1] <= AIM else "OVER"
    kb = totals[1] / 1024
    print(f"gzipped JS + CSS: {totals[1]:,} bytes ({kb:.2f} KB), {verdict} the aim of 8 KB")


if __name__ == "__main__":
    main()
