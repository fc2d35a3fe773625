# Services the test suite needs, started when not running. Sourced by scripts/test.
#   start_postgres: a private PostgreSQL server (Debian's package, installed when missing);
#                   exports RECENGINE_TEST_POSTGRES_URL. postgres_notice: says it is still up.
#   ensure_java:    a Java runtime for the Spark tests (Debian's openjdk-17-jre-headless when
#                   `java` is missing; PySpark 4 needs Java 17 or newer).
#   ensure_chromium, ensure_cjk_font, ensure_axe: see below.

_as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

_apt_install() {
  if ! command -v apt-get >/dev/null; then
    echo "need Debian packages $* but apt-get is not available" >&2; return 1
  fi
  _as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null \
    || { _as_root apt-get update -q >/dev/null && \
         _as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null; }
}

_pg_bindir() {
  local d
  for d in /usr/lib/postgresql/*/bin; do
    [ -x "$d/initdb" ] && { echo "$d"; return 0; }
  done
  return 1
}

start_postgres() {
  if [ -n "${RECENGINE_TEST_POSTGRES_URL:-}" ]; then return 0; fi
  local bindir port dir owner run
  bindir=$(_pg_bindir) || { echo "installing PostgreSQL (Debian package)" >&2; _apt_install postgresql; bindir=$(_pg_bindir); }
  port=${RECENGINE_TEST_PG_PORT:-54329}
  dir=${TMPDIR:-/tmp}/recengine-pg-$port
  owner=$(id -un)
  run=()
  if [ "$(id -u)" = 0 ]; then owner=postgres; run=(runuser -u postgres --); fi
  if ! "$bindir/pg_isready" -q -h 127.0.0.1 -p "$port"; then
    if [ ! -f "$dir/PG_VERSION" ]; then
      mkdir -p "$dir" && chown "$owner" "$dir" && chmod 700 "$dir"
      "${run[@]}" "$bindir/initdb" -D "$dir" -A trust -U postgres -E UTF8 --locale=C.UTF-8 >/dev/null
    fi
    "${run[@]}" "$bindir/pg_ctl" -D "$dir" -l "$dir/server.log" -w \
      -o "-p $port -k /tmp -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" \
      start >/dev/null
    PG_STARTED="started by this run"
  else
    PG_STARTED="already running"
  fi
  PG_STOP="${run[*]:+${run[*]} }$bindir/pg_ctl -D $dir stop"
  export RECENGINE_TEST_POSTGRES_URL="postgresql+psycopg://postgres@127.0.0.1:$port/postgres"
  echo "PostgreSQL ($PG_STARTED): $RECENGINE_TEST_POSTGRES_URL" >&2
}

# Says, at the end of a run, that the private PostgreSQL server is still running (it is left up
# on purpose: the next run, and other checkouts' runs, reuse it) and how to stop it.
postgres_notice() {
  if [ -n "${PG_STOP:-}" ]; then
    echo "PostgreSQL on 127.0.0.1:${RECENGINE_TEST_PG_PORT:-54329} ($PG_STARTED) is left" \
         "running for the next run; stop it with: $PG_STOP" >&2
  fi
}

ensure_java() {
  if command -v java >/dev/null; then return 0; fi
  echo "installing Java 17 for Spark (Debian package openjdk-17-jre-headless)" >&2
  _apt_install openjdk-17-jre-headless
  command -v java >/dev/null || { echo "java still missing after the install" >&2; return 1; }
}

#   ensure_chromium: Debian's chromium for the browser tests (Playwright drives the system
#                    browser; nothing is downloaded at test time); exports RECENGINE_CHROMIUM.
ensure_chromium() {
  local path=${RECENGINE_CHROMIUM:-}
  if [ -z "$path" ]; then path=$(command -v chromium || command -v chromium-browser || true); fi
  if [ -z "$path" ]; then
    echo "installing Chromium (Debian package)" >&2
    _apt_install chromium
    path=$(command -v chromium)
  fi
  export RECENGINE_CHROMIUM="$path"
  echo "Chromium: $RECENGINE_CHROMIUM" >&2
}

#   ensure_cjk_font: a font with Chinese glyphs for the browser (Debian's fonts-noto-cjk) when
#                    fontconfig knows none: without one, Chinese text renders as boxes in the
#                    screenshots the browser tests take (docs/screenshots).
ensure_cjk_font() {
  if command -v fc-list >/dev/null && [ -n "$(fc-list :lang=zh family 2>/dev/null | head -1)" ]; then
    return 0
  fi
  echo "installing a CJK font for the browser (Debian package fonts-noto-cjk)" >&2
  _apt_install fonts-noto-cjk
}

#   ensure_axe: axe-core 4 from the npm registry (the browser tests run it in the page to check
#               accessibility), installed once into a gitignored cache, .cache/node; exports
#               RECENGINE_AXE, the path of its axe.min.js (the tests fail without it). Needs
#               npm (Node.js 20 and npm are on the CI machine; Debian's npm package otherwise).
ensure_axe() {
  local dir=${RECENGINE_NODE_CACHE:-$PWD/.cache/node}
  local file=$dir/node_modules/axe-core/axe.min.js
  if [ ! -f "$file" ]; then
    if ! command -v npm >/dev/null; then
      echo "installing npm for axe-core (Debian package npm)" >&2
      _apt_install npm
    fi
    echo "installing axe-core 4 (npm) into $dir" >&2
    mkdir -p "$dir"
    npm install --no-save --no-audit --no-fund --loglevel=error --prefix "$dir" axe-core@4 >/dev/null
  fi
  [ -f "$file" ] || { echo "axe-core is missing after the install: $file" >&2; return 1; }
  export RECENGINE_AXE="$file"
  echo "axe-core: $RECENGINE_AXE" >&2
}
