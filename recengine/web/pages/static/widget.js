/*! recengine related-articles widget. No dependencies. MIT licence.
 *
 * Embed with one tag per page (plus a placeholder where the list goes):
 *
 *   <div data-recengine-article="ARTICLE-ID"></div>
 *   <script src="https://recengine.example.com/widget.js" defer></script>
 *
 * Optional attributes on the placeholder:
 *   data-recengine-k="5"                 how many links (default 5)
 *   data-recengine-min-score="0.1"       relevance floor, 0..1 (default: the server's
 *                                        related.min_score; fewer links rather than weak ones)
 *   data-recengine-heading="相关文章"      the heading text (default: 相关文章 on a page whose
 *                                        lang is Chinese, zh*, else "Related articles")
 *   data-recengine-heading-level="3"     the heading's level, 1..6 (default 2: an h2)
 *   data-recengine-link="/post/{id}"     link for articles stored without a URL ({id} is replaced)
 *   data-recengine-api="https://..."     API origin (default: where this script was loaded from)
 *   data-recengine-reader="R"            the site's own reader id, if it has one: an A/B test
 *                                        then gives this reader the same variant everywhere
 *                                        (sent only while a test runs)
 *   data-recengine-feedback="off"        send no impressions or clicks
 *
 * Feedback: when at least half of the list has been on screen (IntersectionObserver), one
 * impression per link shown is sent, and a click on a link sends a click; each names the list's
 * article, its A/B variant (as the API's answer named it) and the link's 0-based slot. They go
 * with navigator.sendBeacon (queued by the browser: never delays the page or a navigation), as
 * text/plain (no CORS preflight), with no cookie. Without a reader id, the A/B split uses a
 * random id of this tab (sessionStorage, never sent anywhere else; a new tab, a new id).
 * A split id (reader or tab) is sent only while an A/B test runs, as the server that served
 * this file says (SPLIT below): otherwise every reader of a page asks for the same URL, and a
 * shared cache (a CDN) answers them all.
 *
 * It renders <section class="recengine-related"><h2>..</h2><ul><li><a href>title</a></li></ul>
 * (the heading in the language of the page, the placeholder's nearest lang attribute):
 * plain links in a list, so keyboards, screen readers and reader modes work. Every text is set
 * with textContent (never parsed as HTML) and only http(s) links are used (an article's url may
 * be absolute, "https://...", or a link on the embedding site, "/news/123", resolved against the
 * page; one without a scheme that resolves to another site, "//other.example/x", is not used).
 * When the API is down, slow (4 s) or
 * has nothing related, the placeholder stays empty and hidden: no broken box, no error thrown.
 * Style it through the recengine-* class names.
 *
 * When it stays hidden because of how it is set up, it says why in the browser console, once
 * per page: the API does not allow this page's origin (web.cors_origins on the server), or the
 * API wants a key for reads (web.public_reads). An item it cannot link (no url, or one that is
 * not http(s), and no data-recengine-link to build one) is left out, with one warning per list
 * naming the ids left out.
 */
(function () {
  "use strict";

  var TIMEOUT_MS = 4000;
  var DEFAULT_K = 5;
  var MAX_K = 50;
  var seq = 0;
  var script = document.currentScript;
  var SEEN_RATIO = 0.5;
  var tabId = null;
  var warned = {};
  // Set by the server serving this file (GET /widget.js): whether an A/B test of related lists
  // runs there. A copy served from elsewhere keeps true: it splits as a test needs, uncached.
  var SPLIT = true; /* recengine:split */

  // One console warning per page and cause: a site owner sees why the list is missing.
  function warn(cause, message) {
    if (warned[cause] || typeof console === "undefined" || !console.warn) {
      return;
    }
    warned[cause] = true;
    console.warn("recengine widget: " + message);
  }

  function apiBase(el) {
    var given = el.getAttribute("data-recengine-api");
    var src = given || (script && script.src) || "";
    try {
      return new URL(src, document.baseURI).origin;
    } catch (e) {
      return window.location.origin;
    }
  }

  // An article's url or the placeholder's link: absolute http(s) (any site: the scheme says so),
  // or a link on this page's site, resolved against the page ("/2024/x.html"). A url without
  // its scheme that resolves to another site ("//other.example/x", "/\\other.example") is not
  // used: stored as if it were a path, it would send readers off-site.
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

  // Items it cannot link are left out, and said so once per list (a site owner sees which).
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

  function render(el, body) {
    var items = body && Array.isArray(body.items) ? body.items : [];
    var slot = 0;
    var template = el.getAttribute("data-recengine-link");
    var list = document.createElement("ul");
    var dropped = [];
    list.className = "recengine-list";
    items.forEach(function (item) {
      if (!item || typeof item.id !== "string" || typeof item.title !== "string") {
        return;
      }
      var href = hrefOf(item, template);
      if (href === null) {
        dropped.push(item.id);
        return;
      }
      var link = document.createElement("a");
      link.className = "recengine-link";
      link.href = href;
      link.textContent = item.title || item.id;
      link.setAttribute("data-recengine-slot", String(slot++));
      var entry = document.createElement("li");
      entry.className = "recengine-item";
      entry.appendChild(link);
      list.appendChild(entry);
    });
    warnUnlinked(el, dropped, items.length, template);
    if (!list.firstChild) {
      hide(el);
      return;
    }
    var id = "recengine-heading-" + ++seq;
    var heading = headingOf(el);
    heading.id = id;
    var section = document.createElement("section");
    section.className = "recengine-related";
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

  function headingOf(el) {
    var level = parseInt(el.getAttribute("data-recengine-heading-level") || "", 10);
    var heading = document.createElement(level >= 1 && level <= 6 ? "h" + level : "h2");
    var scope = el.closest ? el.closest("[lang]") : null;
    var lang = scope ? scope.getAttribute("lang") : document.documentElement.lang;
    heading.className = "recengine-heading";
    heading.textContent = el.getAttribute("data-recengine-heading") ||
      (/^zh\b/i.test(lang || "") ? "相关文章" : "Related articles");
    return heading;
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
  // does not allow this origin (CORS: the browser hides the answer). An opaque no-cors request
  // tells them apart: it succeeds whenever the server answers at all.
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
    if (!article || el.getAttribute("data-recengine-state")) {
      return;
    }
    el.setAttribute("data-recengine-state", "loading");
    el.setAttribute("aria-busy", "true");
    el.hidden = true;
    var url =
      apiBase(el) + "/api/v1/articles/" + encodeURIComponent(article) + "/related?k=" + kOf(el) + floorOf(el) +
      splitParams(el);
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
        render(el, body);
        el.setAttribute("data-recengine-state", "done");
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

  function init(root, options) {
    if (typeof fetch !== "function" || typeof URL !== "function") {
      return;
    }
    var fresh = Boolean(options && options.fresh);
    var nodes = (root || document).querySelectorAll("[data-recengine-article]");
    Array.prototype.forEach.call(nodes, function (el) {
      try {
        load(el, fresh);
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
