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
    status.title = "";
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
          throw failure(error.code, error.message);
        }
        return data;
      }, function () {
        throw failure(String(response.status), "the answer is not JSON");
      });
    }, function (e) {
      throw failure("network", String(e && e.message ? e.message : e));
    });
  }

  // The page is Chinese: every error is said in Chinese; the server's own (English) message
  // stays available as the status's tooltip and in the console, for whoever debugs it.
  var ERRORS = {
    unauthorized: "需要 API 密钥：先在上面输入密钥。",
    forbidden: "API 密钥不对，没有保存。",
    writes_disabled: "这个服务器没有配置 API 密钥，不接受修改。",
    not_found: "找不到这篇文章或这条人工干预（可能已被删除），没有保存。",
    conflict: "和已有的人工干预相矛盾，没有保存：先撤销相关的干预。",
    invalid_request: "输入有误，没有保存。",
    invalid_json: "请求格式有误，没有保存。",
    rate_limited: "操作太频繁，请稍后再试。",
    overloaded: "服务器正忙，请稍后再试。",
    timeout: "服务器处理超时，请稍后再试。",
    unavailable: "服务暂时不可用，请稍后再试。",
    model_missing: "还没有 IDF 模型：先运行 recengine reindex。",
    network: "连不上服务器。"
  };

  function failure(code, message) {
    var text = Object.prototype.hasOwnProperty.call(ERRORS, code) ? ERRORS[code] : "出错了（" + code + "）。";
    if (code === "conflict" && /near-duplicate/.test(message)) {
      text = "这篇文章是本文的重复稿，推荐里永远不会出现，所以不能置顶：没有保存。";
    } else if (code === "invalid_request" && /\bby\b/.test(message)) {
      text = "请填写编辑署名，没有保存。";
    } else if (code === "invalid_request" && /\breason\b/.test(message)) {
      text = "理由太长（最多 2000 字），没有保存。";
    }
    var error = new Error(text);
    error.detail = code + ": " + message;
    return error;
  }

  function sayFailure(e) {
    say(String(e && e.message ? e.message : e), true);
    status.title = e && e.detail ? e.detail : "";
    if (e && e.detail && typeof console !== "undefined") {
      console.warn("recengine editor: " + e.detail);
    }
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

  function titled(id, title) {
    return title ? "《" + title + "》" : id; // editors know articles by their titles
  }

  function describe(o) {
    var text = kindName(o.kind) + "：" + titled(o.article, o.article_title);
    text += o.other ? " · " + titled(o.other, o.other_title) : "";
    text += " — " + o.by + (o.reason ? "，理由：" + o.reason : "");
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
        text.title = "ID " + o.article + (o.other ? " · " + o.other : "");
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
      .catch(function (e) { sayFailure(e); root.setAttribute("data-editor-state", "ready"); });
  }

  root.addEventListener("click", function (e) {
    var target = e.target;
    if (!target || target.tagName !== "BUTTON" || !allowed()) {
      return;
    }
    if (target.classList.contains("editor-action")) {
      var kind = target.getAttribute("data-kind");
      var reason = root.querySelector("#editor-reason");
      var body = {
        kind: kind,
        article: article,
        other: target.getAttribute("data-other"),
        reason: reason.value,
        by: root.querySelector("#editor-by").value
      };
      // A reason belongs to one decision: once saved, the field is emptied for the next one.
      act(call("POST", "overrides", body).then(function () { reason.value = ""; }),
          kindName(kind) + "：已保存" + (body.reason ? "（理由已记下）" : ""));
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
        sayFailure(err);
      });
  });

  function enable(on) {
    Array.prototype.forEach.call(root.querySelectorAll("button.editor-action"), function (b) {
      b.disabled = !on;
    });
  }

  refresh(false).catch(sayFailure);
})();
