/*! recengine related-articles widget | MIT */
/* No dependencies. Served without its comment lines and indentation (web/pages/views.py).
 *
 * Embed with one tag per page (plus a placeholder where the list goes):
 *
 *   <div data-recengine-article="ARTICLE-ID"></div>
 *   <script src="https://recengine.example.com/widget.js" defer></script>
 *
 * Optional attributes on the placeholder:
 *   data-recengine-layout="cards"        list | cards (default) | grid
 *   data-recengine-show="image,title"    the parts each item shows, of image, title, date,
 *                                        category, summary (default: list "title date", cards
 *                                        "image title date category", grid all five)
 *   data-recengine-style="none"          link no stylesheet: the site styles the classes itself
 *   data-recengine-k="6"                 how many links (default 6)
 *   data-recengine-min-score="0.1"       relevance floor, 0..1 (default: the server's)
 *   data-recengine-heading="相关文章"      the heading text (default: 相关文章 on a page whose
 *                                        lang is Chinese, zh*, else "Related articles")
 *   data-recengine-heading-level="3"     the heading's level, 1..6 (default 2: an h2)
 *   data-recengine-link="/post/{id}"     link for articles stored without a URL ({id} replaced)
 *   data-recengine-api="https://..."     API origin (default: where this script was loaded from)
 *   data-recengine-reader="R"            the site's reader id, sent only while an A/B test runs
 *   data-recengine-feedback="off"        send no impressions or clicks
 *
 * Cheap on the page: the list is asked for only when the placeholder comes within a screen's
 * height of the viewport (IntersectionObserver; at once where it is missing), and the
 * stylesheet (/widget.css, next to this script) is linked then, once per page: a widget never
 * scrolled near makes no request. No inline style is set (a CSP without 'unsafe-inline'
 * works). Images load lazily in fixed 16:9 boxes (no layout shift); an item without an image
 * gets a neutral placeholder, one whose image fails too.
 *
 * Rendered: <section class="recengine-related recengine-layout-cards"><h2>..</h2><ul><li>
 * [thumbnail] <a href>title</a> <p>(<time datetime>date</time>) (category)</p> <p>summary</p>
 * </li></ul></section> (the same markup as GET /api/v1/articles/<id>/related.html). Every text
 * is set with textContent; links and images only http(s) (an article's url may be absolute, or
 * a path on the embedding site, resolved against the page; one without a scheme that resolves
 * to another site is not used). Dates are formatted for the page's language (Intl) in the
 * reader's time zone. When the API is down, slow (4 s) or has nothing related, the placeholder
 * stays empty and hidden; when that is how it is set up (CORS, keys, links), the console says
 * why, once.
 *
 * Feedback: when at least half of the list has been on screen, one impression per link shown,
 * and a click per click, are sent with navigator.sendBeacon (text/plain, no cookie), naming the
 * list's article, its A/B variant and the link's slot. A split id (reader or a random id of
 * this tab) is sent only while an A/B test runs (SPLIT, set by the server): otherwise every
 * reader of a page asks for the same URL, which a shared cache (a CDN) answers.
 */
(function () {
  "use strict";

  var TIMEOUT_MS = 4000;
  var CSS_WAIT_MS = 3000;
  var DEFAULT_K = 6; // two rows of three cards
  var MAX_K = 50;
  var NEAR = "100% 0px"; // a screen's height above and below the viewport
  var SEEN_RATIO = 0.5;
  var LAYOUTS = {
    list: "title date",
    cards: "image title date category",
    grid: "image title date category summary"
  };
  var seq = 0;
  var script = document.currentScript;
  var tabId = null;
  var warned = {};
  var styles = {};
  var near = null;
  // Set by the server serving this file (GET /widget.js): whether an A/B test of related lists
  // runs there. A copy served from elsewhere keeps true: it splits as a test needs, uncached.
  var SPLIT = true; /* recengine:split */

  function warn(cause, message) {
    if (warned[cause] || typeof console === "undefined" || !console.warn) {
      return;
    }
    warned[cause] = true;
    console.warn("recengine widget: " + message);
  }

  function apiBase(el) {
    var src = el.getAttribute("data-recengine-api") || (script && script.src) || "";
    try {
      return new URL(src, document.baseURI).origin;
    } catch (e) {
      return window.location.origin;
    }
  }

  // An article's url or the placeholder's link: absolute http(s) (any site: the scheme says
  // so), or a link on this page's site ("/2024/x.html"). One without its scheme that resolves
  // to another site ("//other.example/x", "/\\other.example") is not used.
  function safeHref(raw) {
    if (typeof raw !== "string" || raw === "") {
      return null;
    }
    try {
      var url = new URL(raw, document.baseURI);
      if (url.protocol !== "http:" && url.protocol !== "https:") {
        return null;
      }
      var explicit = /^https?:\/\//i.test(raw);
      return explicit || url.origin === new URL(document.baseURI).origin ? url.href : null;
    } catch (e) {
      return null;
    }
  }

  // An image may come from any site (a CDN), but only over http(s).
  function safeSrc(raw) {
    if (typeof raw !== "string" || raw === "" || /[\s"'<>`\\]/.test(raw)) {
      return null;
    }
    try {
      var url = new URL(raw, document.baseURI);
      return url.protocol === "http:" || url.protocol === "https:" ? url.href : null;
    } catch (e) {
      return null;
    }
  }

  function hrefOf(item, template) {
    var href = safeHref(item.url);
    if (href === null && template) {
      href = safeHref(template.split("{id}").join(encodeURIComponent(item.id)));
    }
    return href;
  }

  function hide(el) {
    el.textContent = "";
    el.hidden = true;
    el.removeAttribute("aria-busy");
  }

  function warnUnlinked(el, dropped, total, template) {
    if (!dropped.length || typeof console === "undefined" || !console.warn) {
      return;
    }
    console.warn(
      "recengine widget: " + dropped.length + " of " + total + " related articles of " +
        el.getAttribute("data-recengine-article") + " left out: no url, or one that is not " +
        "http(s)" + (template ? " (the data-recengine-link template gave none either)" :
        ', and the placeholder has no data-recengine-link (e.g. data-recengine-link="/post/{id}")') +
        " (ids: " + dropped.join(", ") + ")"
    );
  }

  function node(tag, className, text) {
    var made = document.createElement(tag);
    made.className = className;
    if (text) {
      made.textContent = text;
    }
    return made;
  }

  function langOf(el) {
    var scope = el.closest ? el.closest("[lang]") : null;
    return (scope ? scope.getAttribute("lang") : document.documentElement.lang) || "";
  }

  function layoutOf(el) {
    var layout = el.getAttribute("data-recengine-layout");
    return LAYOUTS.hasOwnProperty(layout) ? layout : "cards";
  }

  function partsOf(el, layout) {
    var shown = { title: true };
    (el.getAttribute("data-recengine-show") || LAYOUTS[layout]).split(/[\s,]+/).forEach(
      function (part) {
        shown[part] = true;
      }
    );
    return shown;
  }

  function dateText(iso, lang) {
    var date = new Date(iso);
    if (isNaN(date.getTime())) {
      return null;
    }
    try {
      return new Intl.DateTimeFormat(lang || undefined, {
        year: "numeric", month: "short", day: "numeric"
      }).format(date);
    } catch (e) {
      return iso.slice(0, 10);
    }
  }

  function thumbnail(item) {
    var box = node("span", "recengine-thumb");
    var src = safeSrc(item.image);
    if (src === null) {
      return empty(box, item);
    }
    var img = node("img", "recengine-image");
    img.alt = "";
    img.loading = "lazy";
    img.decoding = "async";
    img.width = 480;
    img.height = 270;
    img.addEventListener("error", function () {
      box.removeChild(img);
      empty(box, item);
    });
    img.src = src;
    box.appendChild(img);
    return box;
  }

  // No image: a neutral tile with the title's first letter or digit, in one of six tints
  // (shown by the stylesheet; the fragment picks the same).
  function empty(box, item) {
    var initial = Array.from(item.title || item.id).filter(function (c) {
      return /[\p{L}\p{N}]/u.test(c);
    })[0] || "";
    box.className = "recengine-thumb recengine-thumb-none";
    box.setAttribute("aria-hidden", "true");
    box.setAttribute("data-initial", initial);
    box.setAttribute("data-tone", String(initial ? initial.codePointAt(0) % 6 : 0));
    return box;
  }

  function entry(item, href, slot, parts, lang) {
    var li = node("li", "recengine-item");
    if (parts.image) {
      li.appendChild(thumbnail(item));
    }
    var link = node("a", "recengine-link");
    link.href = href;
    link.setAttribute("data-recengine-slot", String(slot));
    link.appendChild(node("span", "recengine-title", item.title || item.id));
    li.appendChild(link);
    var meta = node("p", "recengine-meta");
    var when = parts.date && typeof item.published_at === "string" ?
      dateText(item.published_at, lang) : null;
    if (when) {
      var time = node("time", "recengine-date", when);
      time.setAttribute("datetime", item.published_at);
      meta.appendChild(time);
    }
    if (parts.category && typeof item.category === "string" && item.category) {
      meta.appendChild(node("span", "recengine-category", item.category));
    }
    if (meta.firstChild) {
      li.appendChild(meta);
    }
    if (parts.summary && typeof item.summary === "string" && item.summary) {
      li.appendChild(node("p", "recengine-summary", item.summary));
    }
    return li;
  }

  function render(el, body) {
    var items = body && Array.isArray(body.items) ? body.items : [];
    var slot = 0;
    var template = el.getAttribute("data-recengine-link");
    var layout = layoutOf(el);
    var parts = partsOf(el, layout);
    var lang = langOf(el);
    var list = node("ul", "recengine-list");
    var dropped = [];
    items.forEach(function (item) {
      if (!item || typeof item.id !== "string" || typeof item.title !== "string") {
        return;
      }
      var href = hrefOf(item, template);
      if (href === null) {
        dropped.push(item.id);
        return;
      }
      list.appendChild(entry(item, href, slot++, parts, lang));
    });
    warnUnlinked(el, dropped, items.length, template);
    if (!list.firstChild) {
      hide(el);
      return;
    }
    var id = "recengine-heading-" + ++seq;
    var heading = headingOf(el, lang);
    heading.id = id;
    var section = node(
      "section",
      "recengine-related recengine-layout-" + layout + (parts.image ? " recengine-thumbs" : "")
    );
    section.setAttribute("aria-labelledby", id);
    section.appendChild(heading);
    section.appendChild(list);
    el.textContent = "";
    el.appendChild(section);
    el.hidden = false;
    el.removeAttribute("aria-busy");
    var variant = body && typeof body.variant === "string" ? body.variant : "default";
    watch(el, section, list, variant, slot);
  }

  function headingOf(el, lang) {
    var level = parseInt(el.getAttribute("data-recengine-heading-level") || "", 10);
    var heading = node(level >= 1 && level <= 6 ? "h" + level : "h2", "recengine-heading");
    heading.textContent = el.getAttribute("data-recengine-heading") ||
      (/^zh\b/i.test(lang) ? "相关文章" : "Related articles");
    return heading;
  }

  // -- the stylesheet: linked once per page, before the first list is shown -----------------

  function stylesheet(el) {
    if (el.getAttribute("data-recengine-style") === "none") {
      return Promise.resolve();
    }
    var href;
    try {
      href = new URL("widget.css", (script && script.src) || apiBase(el) + "/").href;
    } catch (e) {
      return Promise.resolve();
    }
    if (!styles[href]) {
      styles[href] = new Promise(function (resolve) {
        var link = document.querySelector('link[rel="stylesheet"][href="' + href + '"]');
        if (link) {
          resolve();
          return;
        }
        link = document.createElement("link");
        link.rel = "stylesheet";
        link.href = href;
        link.onload = link.onerror = function () { resolve(); };
        setTimeout(resolve, CSS_WAIT_MS);
        (document.head || document.documentElement).appendChild(link);
      });
    }
    return styles[href];
  }

  // -- feedback: impressions and clicks -------------------------------------------------

  function send(el, events) {
    if (el.getAttribute("data-recengine-feedback") === "off" || !events.length) {
      return;
    }
    var url = apiBase(el) + "/api/v1/feedback";
    var data = JSON.stringify(events);
    try {
      if (navigator.sendBeacon && navigator.sendBeacon(url, new Blob([data], { type: "text/plain" }))) {
        return;
      }
      fetch(url, { method: "POST", body: data, keepalive: true, credentials: "omit",
                   headers: { "Content-Type": "text/plain" } }).catch(function () {});
    } catch (e) {
      // feedback is best effort: the list works without it
    }
  }

  function event(type, el, variant, slot) {
    return { type: type, article: el.getAttribute("data-recengine-article"), variant: variant, slot: slot };
  }

  function watch(el, section, list, variant, shown) {
    list.addEventListener("click", function (e) {
      var link = e.target && e.target.closest ? e.target.closest("a[data-recengine-slot]") : null;
      if (link) {
        send(el, [event("click", el, variant, Number(link.getAttribute("data-recengine-slot")))]);
      }
    });
    if (typeof IntersectionObserver !== "function") {
      return;
    }
    var observer = new IntersectionObserver(function (entries) {
      for (var i = 0; i < entries.length; i++) {
        if (entries[i].isIntersecting && entries[i].intersectionRatio >= SEEN_RATIO) {
          observer.disconnect();
          var events = [];
          for (var slot = 0; slot < shown; slot++) {
            events.push(event("impression", el, variant, slot));
          }
          send(el, events);
          el.setAttribute("data-recengine-seen", "true");
          return;
        }
      }
    }, { threshold: [SEEN_RATIO] });
    observer.observe(section);
  }

  function splitParams(el) {
    if (!SPLIT) {
      return "";
    }
    var reader = el.getAttribute("data-recengine-reader");
    if (reader) {
      return "&reader=" + encodeURIComponent(reader);
    }
    if (tabId === null) {
      try {
        tabId = window.sessionStorage.getItem("recengine-session");
        if (!tabId) {
          tabId = Math.random().toString(36).slice(2) + Date.now().toString(36);
          window.sessionStorage.setItem("recengine-session", tabId);
        }
      } catch (e) {  // storage refused (privacy settings): an id for this page view
        tabId = tabId || Math.random().toString(36).slice(2);
      }
    }
    return "&session=" + encodeURIComponent(tabId);
  }

  // A fetch that fails without an answer is either a server that cannot be reached or one that
  // does not allow this origin (CORS hides the answer). An opaque no-cors request tells them
  // apart: it succeeds whenever the server answers at all.
  function explain(base, url) {
    fetch(url, { mode: "no-cors", credentials: "omit" })
      .then(function () {
        warn("cors", "the API at " + base + " does not allow pages of " +
          window.location.origin + ": add it to web.cors_origins on the server " +
          "(RECENGINE_WEB__CORS_ORIGINS='[\"" + window.location.origin + "\"]')");
      })
      .catch(function () {
        warn("down", "cannot reach the API at " + base + " (is it running?)");
      });
  }

  function kOf(el) {
    var k = parseInt(el.getAttribute("data-recengine-k") || "", 10);
    return k >= 1 && k <= MAX_K ? k : DEFAULT_K;
  }

  function floorOf(el) {
    var raw = el.getAttribute("data-recengine-min-score");
    var value = raw === null || raw === "" ? NaN : Number(raw);
    return value >= 0 && value <= 1 ? "&min_score=" + value : "";
  }

  function load(el, fresh) {
    var article = el.getAttribute("data-recengine-article");
    if (!article || el.getAttribute("data-recengine-state") === "loading") {
      return;
    }
    el.setAttribute("data-recengine-state", "loading");
    el.setAttribute("aria-busy", "true");
    var url =
      apiBase(el) + "/api/v1/articles/" + encodeURIComponent(article) + "/related?k=" + kOf(el) +
      floorOf(el) + splitParams(el);
    var styled = stylesheet(el);
    var controller = typeof AbortController === "function" ? new AbortController() : null;
    var timer = controller ? setTimeout(function () { controller.abort(); }, TIMEOUT_MS) : null;
    fetch(url, {
      credentials: "omit",
      // A refresh asks the server (an ETag makes it a 304 when nothing changed): the list is
      // public and cacheable for web.cache max-age, and an editor's change must show at once.
      cache: fresh ? "no-cache" : "default",
      headers: { Accept: "application/json" },
      signal: controller ? controller.signal : undefined
    })
      .then(function (response) {
        if (response.status === 401 || response.status === 403) {
          warn("auth", "the API at " + apiBase(el) + " needs a key for reads " +
            "(web.public_reads = false on the server): the widget cannot show related articles");
        }
        return response.ok ? response.json() : null;
      })
      .then(function (body) {
        return styled.then(function () {
          render(el, body);
          el.setAttribute("data-recengine-state", "done");
        });
      })
      .catch(function (error) {
        hide(el);
        el.setAttribute("data-recengine-state", "failed");
        if (!(error && error.name === "AbortError")) {
          explain(apiBase(el), url);
        }
      })
      .then(function () {
        if (timer) {
          clearTimeout(timer);
        }
      });
  }

  // The list is asked for when the placeholder comes within a screen of the viewport.
  function whenNear(el, fresh) {
    if (fresh || typeof IntersectionObserver !== "function") {
      if (near !== null) {
        near.unobserve(el);
      }
      load(el, fresh);
      return;
    }
    if (near === null) {
      near = new IntersectionObserver(function (entries) {
        entries.forEach(function (seen) {
          if (seen.isIntersecting) {
            near.unobserve(seen.target);
            load(seen.target, false);
          }
        });
      }, { rootMargin: NEAR });
    }
    el.setAttribute("data-recengine-state", "waiting");
    near.observe(el);
  }

  function init(root, options) {
    if (typeof fetch !== "function" || typeof URL !== "function" || typeof Promise !== "function") {
      return;
    }
    var fresh = Boolean(options && options.fresh);
    var nodes = (root || document).querySelectorAll("[data-recengine-article]");
    Array.prototype.forEach.call(nodes, function (el) {
      if (el.getAttribute("data-recengine-state")) {
        return;
      }
      try {
        whenNear(el, fresh);
      } catch (e) {
        hide(el);
      }
    });
  }

  window.recengineWidget = { init: init };
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { init(); });
  } else {
    init();
  }
})();
