/*! recengine demo page: the editor view. No dependencies.
 *
 * Buttons on the duplicates table ("not a duplicate") and on the editor's copy of the related
 * list ("same article", "pin", "block") store overrides through /api/v1/overrides; the lists
 * are then read again, so the editor sees what readers will see. The API key is entered once
 * and kept in this script's memory only (never in storage, a cookie or the URL): a reload
 * forgets it. On a server that takes writes without a key (allow_open_writes and no key: the
 * demo, data-editor-open="true") there is no key to enter and the buttons work at once. Every
 * text is set with textContent; no inline script or handler (the page's CSP allows only this
 * origin's scripts).
 */
(function () {
  "use strict";

  var root = document.querySelector("section.editor[data-editor-article]");
  if (!root || typeof fetch !== "function") {
    return;
  }
  var article = root.getAttribute("data-editor-article");
  var key = null; // page memory only
  var open = root.getAttribute("data-editor-open") === "true"; // writes need no key here
  var status = root.querySelector("#editor-status");
  var related = root.querySelector("#editor-related");
  var overrides = root.querySelector("#editor-overrides");

  function api(path) {
    return window.location.origin + "/api/v1/" + path;
  }

  function say(text, failed) {
    status.textContent = text;
    status.className = failed ? "failed" : "";
  }

  function call(method, path, body) {
    var init = { method: method, credentials: "omit", headers: { Accept: "application/json" } };
    if (method === "GET") {
      init.cache = "no-cache"; // lists are cacheable for max-age: the editor needs them now
    }
    if (key !== null) {
      init.headers.Authorization = "Bearer " + key;
    }
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    return fetch(api(path), init).then(function (response) {
      return response.json().then(function (data) {
        if (!response.ok) {
          var error = data && data.error ? data.error : { code: String(response.status), message: "" };
          throw new Error(error.code + ": " + error.message);
        }
        return data;
      });
    });
  }

  function button(label, kind, other) {
    var b = document.createElement("button");
    b.type = "button";
    b.className = "editor-action";
    b.textContent = label;
    b.setAttribute("data-kind", kind);
    b.setAttribute("data-other", other);
    b.disabled = !allowed();
    return b;
  }

  function demoLink(id, title) {
    var a = document.createElement("a");
    a.href = window.location.pathname + "?article=" + encodeURIComponent(id);
    a.textContent = title || id;
    return a;
  }

  function showRelated() {
    var path = "articles/" + encodeURIComponent(article) + "/related?k=8";
    return call("GET", path).then(function (body) {
      related.textContent = "";
      (body.items || []).forEach(function (item) {
        var li = document.createElement("li");
        li.setAttribute("data-id", item.id);
        li.appendChild(demoLink(item.id, item.title));
        if (item.reasons && item.reasons.pinned) {
          var badge = document.createElement("span");
          badge.className = "badge";
          badge.textContent = "置顶";
          li.appendChild(badge);
        }
        li.appendChild(button("同一篇稿件", "same_article", item.id));
        li.appendChild(button("置顶", "pin", item.id));
        li.appendChild(button("屏蔽", "block", item.id));
        related.appendChild(li);
      });
    });
  }

  function showDuplicates() {
    return call("GET", "articles/" + encodeURIComponent(article) + "/duplicates").then(function (body) {
      var still = {};
      (body.duplicates || []).forEach(function (d) { still[d.id] = true; });
      Array.prototype.forEach.call(root.querySelectorAll("tr[data-id]"), function (row) {
        if (!still[row.getAttribute("data-id")]) {
          row.parentNode.removeChild(row);
        }
      });
    });
  }

  var KINDS = {
    not_duplicate: "不是重复稿", same_article: "同一篇稿件", canonical: "指定主稿",
    pin: "置顶", block: "屏蔽", exclude: "排除"
  };

  function kindName(kind) {
    return Object.prototype.hasOwnProperty.call(KINDS, kind) ? KINDS[kind] : String(kind);
  }

  function describe(o) {
    var text = kindName(o.kind) + " " + o.article + (o.other ? " · " + o.other : "");
    text += " — " + o.by + (o.reason ? "：" + o.reason : "");
    return o.active ? text : text + "（涉及已删除的文章：保留，暂不生效）";
  }

  function allowed() {
    return open || key !== null;
  }

  function showOverrides() {
    if (!allowed()) {
      return Promise.resolve();
    }
    return call("GET", "overrides?article=" + encodeURIComponent(article)).then(function (body) {
      overrides.textContent = "";
      (body.overrides || []).forEach(function (o) {
        var li = document.createElement("li");
        li.setAttribute("data-override", String(o.id));
        var text = document.createElement("span");
        text.className = "override-text";
        text.textContent = describe(o);
        li.appendChild(text);
        var remove = document.createElement("button");
        remove.type = "button";
        remove.className = "editor-remove";
        remove.textContent = "撤销";
        remove.setAttribute("data-override", String(o.id));
        li.appendChild(remove);
        overrides.appendChild(li);
      });
    });
  }

  function refreshWidget() {
    var slot = document.querySelector("[data-recengine-article]");
    if (slot && window.recengineWidget) {
      slot.removeAttribute("data-recengine-state");
      window.recengineWidget.init(slot.parentNode, { fresh: true });
    }
  }

  function refresh(widgetToo) {
    return Promise.all([showRelated(), showDuplicates(), showOverrides()]).then(function () {
      if (widgetToo) {
        refreshWidget();
      }
      root.setAttribute("data-editor-state", "ready");
    });
  }

  function act(promise, done) {
    root.setAttribute("data-editor-state", "busy");
    promise
      .then(function () { say(done, false); return refresh(true); })
      .catch(function (e) { say(String(e.message || e), true); root.setAttribute("data-editor-state", "ready"); });
  }

  root.addEventListener("click", function (e) {
    var target = e.target;
    if (!target || target.tagName !== "BUTTON" || !allowed()) {
      return;
    }
    if (target.classList.contains("editor-action")) {
      var kind = target.getAttribute("data-kind");
      var body = {
        kind: kind,
        article: article,
        other: target.getAttribute("data-other"),
        reason: root.querySelector("#editor-reason").value,
        by: root.querySelector("#editor-by").value
      };
      act(call("POST", "overrides", body), kindName(kind) + "：已保存");
    } else if (target.classList.contains("editor-remove")) {
      act(call("DELETE", "overrides/" + target.getAttribute("data-override")), "已撤销");
    }
  });

  root.querySelector("#editor-key-form").addEventListener("submit", function (e) {
    e.preventDefault();
    var field = root.querySelector("#editor-key");
    if (!field) {
      return; // no key here (open writes)
    }
    key = field.value || null;
    field.value = ""; // kept in this script's memory only
    enable(key !== null);
    if (key === null) {
      return;
    }
    showOverrides()
      .then(function () { say("密钥只保存在本页的内存里", false); })
      .catch(function (err) {
        key = null; // a wrong key is not kept
        enable(false);
        say(String(err.message || err), true);
      });
  });

  function enable(on) {
    Array.prototype.forEach.call(root.querySelectorAll("button.editor-action"), function (b) {
      b.disabled = !on;
    });
  }

  refresh(false).catch(function (e) { say(String(e.message || e), true); });
})();
