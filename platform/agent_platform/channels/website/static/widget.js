/* Agent Platform chat widget: a launcher and a chat panel on any page.
 * Plain JavaScript, no framework, no build step. Embedded with
 *   <script src="<server>/widget/<channel id>/widget.js" async></script>
 * optionally with data-user-id and data-user-hash (identity verification).
 * Everything a visitor or an agent typed is put on the page with
 * textContent, never as HTML. Replies are pushed (server-sent events:
 * EventSource); where the browser has no EventSource or the stream is
 * refused (an error answer, a proxy that fails it or holds it back), they
 * arrive by polling instead: about every second while the visitor's
 * message awaits its answer, less often when the conversation is quiet or
 * the panel is closed (docs/channels.md, "Website widget"). Both bring the
 * same changes, applied the same way. An agent's question with choices shows them as buttons
 * under it: one press sends the choice, and they are disabled once pressed
 * or once a newer message stands below them. */
(function () {
  "use strict";
  var script = document.currentScript;
  var found = script && script.src.match(/^(.*\/widget\/([^\/?#]+))\/widget\.js/);
  if (!found) return;
  var api = found[1] + "/api/";
  var storeKey = "agent-platform-widget:" + found[2];
  var pageMode = script.getAttribute("data-page") === "1";
  // Without the server's pace (below): poll every FAST ms for ACTIVE_FOR ms
  // after the visitor wrote, opened the panel or was answered, then every
  // IDLE ms. Every AWAY ms while the panel is closed or the page hidden.
  var FAST = 1000, IDLE = 5000, AWAY = 15000, ACTIVE_FOR = 30000;
  // A poll's answer may say when to ask again (X-Poll-After, seconds): soon
  // while the visitor's message awaits its answer, else the quiet pace. It
  // stands in for the fast half minute while the panel is open and shown.
  var pollAfter = null;
  // A stream that errs this many times before it opens, or has not opened
  // within OPEN_WITHIN ms (a proxy holding it back), is given up for polling.
  var TRIES = 2, OPEN_WITHIN = 5000;
  var streaming = false;
  var state = load();
  var known = {}, order = [], config = {}, ui = {}, pressed = {};
  var open = pageMode, since = null, tag = null, lastActivity = 0, timer = null, unread = 0;

  function load() {
    try { return JSON.parse(localStorage.getItem(storeKey)) || {}; } catch (e) { return {}; }
  }
  function save() {
    try { localStorage.setItem(storeKey, JSON.stringify(state)); } catch (e) { /* private mode */ }
  }

  function call(method, path, body) {
    var headers = { "Content-Type": "application/json" };
    if (state.token) headers["X-Visitor-Token"] = state.token;
    return fetch(api + path, {
      method: method, headers: headers, mode: "cors", credentials: "omit", cache: "no-store",
      body: body ? JSON.stringify(body) : undefined
    }).then(function (response) {
      if (method === "GET") pollAfter = serverPace(response.headers.get("X-Poll-After"));
      if (response.status === 204) return null;
      return response.json().then(function (json) {
        if (!response.ok) throw json.error || { message: "HTTP " + response.status };
        return json.data;
      });
    });
  }

  function start() {
    var body = { visitor_token: state.token };
    var userId = script.getAttribute("data-user-id");
    if (userId) body = { user_id: userId, user_hash: script.getAttribute("data-user-hash") };
    return call("POST", "session", body).catch(function (error) {
      if (!state.token || userId) throw error;
      state.token = null; // a token this channel no longer knows: start afresh
      return call("POST", "session", {});
    }).then(function (data) {
      state.token = data.visitor_token;
      save();
      config = data.config;
      draw();
      listen();
    }).catch(function (error) {
      // The page's owner looks in the console when nothing shows: say why
      // there (an origin not allowed says what to do), not only "CORS".
      console.error("Agent Platform widget: the chat cannot start: " +
        (error && error.message ? error.message : String(error)));
    });
  }

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  var CSS = [
    ":host{all:initial}",
    ".root{position:fixed;bottom:20px;z-index:2147483000;font:14px/1.4 system-ui,sans-serif;",
    "display:flex;flex-direction:column}",
    ".root.left{left:20px;align-items:flex-start}.root.right{right:20px;align-items:flex-end}",
    ".root.page{position:static;height:100vh}.page .panel{flex:1}",
    ".launcher{border:0;border-radius:24px;padding:12px 20px;cursor:pointer;font:inherit;",
    "box-shadow:0 4px 12px rgba(0,0,0,.25);position:relative}",
    ".badge{position:absolute;top:-6px;right:-6px;background:#d93025;color:#fff;",
    "border-radius:10px;padding:0 6px;font-size:12px}",
    ".panel{width:340px;height:480px;display:flex;flex-direction:column;border-radius:12px;",
    "overflow:hidden;box-shadow:0 8px 24px rgba(0,0,0,.25);margin-bottom:12px}",
    ".page .panel{width:100%;height:100%;border-radius:0;margin:0;box-shadow:none}",
    ".head{padding:12px 16px;display:flex;justify-content:space-between;align-items:center}",
    ".head strong{font-size:15px}.close{background:none;border:0;color:inherit;",
    "font-size:20px;cursor:pointer}",
    ".log{flex:1;overflow-y:auto;padding:12px;display:flex;flex-direction:column;gap:8px}",
    ".msg{max-width:80%;padding:8px 12px;border-radius:12px;white-space:pre-wrap;",
    "word-wrap:break-word}",
    ".msg.visitor{align-self:flex-end}.msg.agent,.msg.human,.msg.system,.msg.greeting{",
    "align-self:flex-start;background:rgba(127,127,127,.15)}",
    ".who{display:block;font-size:11px;opacity:.7}",
    ".msg.pending{opacity:.6}.msg.deleted{font-style:italic;opacity:.6}",
    "form{display:flex;flex-direction:column;gap:6px;padding:10px;",
    "border-top:1px solid rgba(127,127,127,.3)}",
    ".row{display:flex;gap:6px}input,textarea{flex:1;font:inherit;padding:8px;",
    "border:1px solid rgba(127,127,127,.5);border-radius:8px;resize:none}",
    "button.send{border:0;border-radius:8px;padding:0 14px;cursor:pointer;font:inherit}",
    ".error{color:#d93025;font-size:12px;min-height:0}",
    ".choices{display:flex;flex-direction:column;gap:4px;margin-top:6px}",
    "button.choice{font:inherit;text-align:left;padding:6px 10px;border-radius:8px;",
    "border:1px solid;background:#fff;cursor:pointer}",
    "button.choice:disabled{opacity:.5;cursor:default}"
  ].join("");

  function draw() {
    var host = el("div");
    host.id = "agent-platform-widget";
    (document.body || document.documentElement).appendChild(host);
    var shadow = host.attachShadow({ mode: "open" });
    shadow.appendChild(el("style", null, CSS));
    var primary = config.primary_color || "#1a73e8";
    var background = config.background_color || "#ffffff";
    var text = config.text_color || "#202124";
    var side = config.position === "bottom-left" ? "left" : "right";
    ui.root = el("div", "root " + (pageMode ? "page" : side));
    ui.panel = el("div", "panel");
    ui.panel.style.background = background;
    ui.panel.style.color = text;
    var head = el("div", "head");
    head.style.background = primary;
    head.style.color = "#fff";
    head.appendChild(el("strong", null, config.title));
    if (!pageMode) {
      var close = el("button", "close", "\u00d7");
      close.setAttribute("aria-label", "Close");
      close.onclick = toggle;
      head.appendChild(close);
    }
    ui.log = el("div", "log");
    ui.log.setAttribute("role", "log");
    ui.log.setAttribute("aria-live", "polite");
    if (config.greeting) ui.log.appendChild(el("div", "msg greeting", config.greeting));
    ui.panel.appendChild(head);
    ui.panel.appendChild(ui.log);
    ui.panel.appendChild(form(primary));
    ui.root.appendChild(ui.panel);
    if (!pageMode) {
      ui.launcher = el("button", "launcher", config.launcher_text || "Chat with us");
      ui.launcher.style.background = primary;
      ui.launcher.style.color = "#fff";
      ui.launcher.onclick = toggle;
      ui.badge = el("span", "badge");
      ui.root.appendChild(ui.launcher);
    }
    shadow.appendChild(ui.root);
    show();
  }

  function form(primary) {
    var node = el("form");
    ui.name = config.require_name && !state.name ? field("input", "Your name") : null;
    ui.email = config.require_email && !state.email ? field("input", "Your e-mail") : null;
    if (ui.email) ui.email.type = "email";
    [ui.name, ui.email].forEach(function (input) { if (input) node.appendChild(input); });
    var row = el("div", "row");
    ui.input = field("textarea", "Write a message");
    ui.input.rows = 2;
    ui.input.onkeydown = function (event) {
      if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); submit(); }
    };
    var send = el("button", "send", "Send");
    send.type = "submit";
    send.style.background = primary;
    send.style.color = "#fff";
    row.appendChild(ui.input);
    row.appendChild(send);
    node.appendChild(row);
    ui.error = el("div", "error");
    node.appendChild(ui.error);
    node.onsubmit = function (event) { event.preventDefault(); submit(); };
    return node;
  }

  function field(tag, placeholder) {
    var input = el(tag);
    input.placeholder = placeholder;
    input.setAttribute("aria-label", placeholder);
    return input;
  }

  function toggle() {
    open = !open;
    if (open) { unread = 0; lastActivity = Date.now(); markRead(); if (!streaming) poll(); }
    show();
  }

  function show() {
    ui.panel.style.display = open ? "flex" : "none";
    if (!ui.launcher) return;
    ui.badge.textContent = String(unread);
    if (unread && !open) ui.launcher.appendChild(ui.badge);
    else if (ui.badge.parentNode) ui.badge.parentNode.removeChild(ui.badge);
  }

  function submit() {
    var text = ui.input.value;
    if (!text.trim() || !identified()) return;
    ui.input.value = "";
    post({ text: text }, text, function () { ui.input.value = text; });
  }

  // A pressed button: its data is the choice, its text what the visitor said.
  function choose(messageId, button) {
    if (pressed[messageId] || !identified()) return;
    pressed[messageId] = true;
    post({ choice: button.data }, button.text, function (error) {
      if (error.status !== 400) delete pressed[messageId]; // a stale choice stays off
      refreshChoices();
    });
  }

  function identified() {
    if (ui.name && !ui.name.value.trim()) return fail({ message: "Please give your name." });
    if (ui.email && !ui.email.value.trim()) return fail({ message: "Please give your e-mail." });
    if (ui.name) state.name = ui.name.value.trim();
    if (ui.email) state.email = ui.email.value.trim();
    return true;
  }

  // A send that failed with no answer from the service (the network, a
  // proxy's 502) may have been stored all the same: the same text or press
  // sent again keeps its id, so the service stores it once.
  var unsure = null; // { sent, id }

  function post(fields, text, undo) {
    var sent = JSON.stringify(fields);
    var again = unsure && unsure.sent === sent;
    var body = { client_message_id: again ? unsure.id : randomId(), name: state.name, email: state.email };
    for (var key in fields) body[key] = fields[key];
    ui.error.textContent = "";
    var pending = { id: "pending:" + body.client_message_id, from: "visitor", text: text };
    upsert(pending, "pending");
    lastActivity = Date.now();
    call("POST", "messages", body).then(function (message) {
      unsure = null;
      remove(pending.id);
      upsert(message);
      save();
      [ui.name, ui.email].forEach(function (input) {
        if (input && input.parentNode) input.parentNode.removeChild(input);
      });
      ui.name = ui.email = null;
      if (!streaming) poll();
    }, function (error) {
      var refused = error.status >= 400 && error.status < 500;
      unsure = refused ? null : { sent: sent, id: body.client_message_id };
      remove(pending.id);
      undo(error);
      fail(error);
    });
  }

  function fail(error) { ui.error.textContent = error.message || "Something went wrong."; return false; }

  function randomId() {
    var bytes = new Uint8Array(12);
    crypto.getRandomValues(bytes);
    return Array.prototype.map.call(bytes, function (b) { return ("0" + b.toString(16)).slice(-2); }).join("");
  }

  // The stream's first event is what changed since the widget's cursor (all
  // of it on a first visit), so it needs no poll of its own; the browser
  // reconnects a stream that ends, with the id of the last change it got.
  function listen() {
    if (!window.EventSource) return poll();
    var url = api + "events?token=" + encodeURIComponent(state.token) + cursor("&");
    var source = new EventSource(url), opened = false, failures = 0;
    var deadline = setTimeout(giveUp, OPEN_WITHIN);
    source.onopen = function () {
      opened = true; failures = 0; streaming = true;
      clearTimeout(deadline); clearTimeout(timer);
    };
    source.onmessage = function (event) { received(JSON.parse(event.data)); };
    source.onerror = function () {
      // CLOSED: refused (an error status, not an event stream); else it
      // reconnects by itself, which is fine unless it never gets through.
      if (source.readyState === EventSource.CLOSED || (!opened && ++failures >= TRIES)) giveUp();
      opened = false;
    };
    function giveUp() {
      clearTimeout(deadline);
      source.close();
      streaming = false;
      poll();
    }
  }

  function cursor(separator) {
    if (!tag) return "";
    return separator + "seen=" + tag + (since ? "&since=" + encodeURIComponent(since) : "");
  }

  function poll() {
    clearTimeout(timer);
    if (streaming) return;
    call("GET", "messages" + cursor("?")).then(function (data) {
      if (data) received(data);
    }).catch(function () { /* offline or limited: the next poll tries again */ })
      .then(schedule);
  }

  function schedule() {
    clearTimeout(timer);
    if (streaming) return;
    var delay = !open || document.visibilityState === "hidden" ? AWAY
      : pollAfter !== null ? pollAfter
      : Date.now() - lastActivity < ACTIVE_FOR ? FAST : IDLE;
    timer = setTimeout(poll, delay);
  }

  // The server's pace in ms, kept between FAST and AWAY; null without one.
  function serverPace(value) {
    var seconds = Number(value);
    if (!value || !isFinite(seconds)) return null;
    return Math.min(Math.max(seconds * 1000, FAST), AWAY);
  }

  function received(data) {
    since = data.since;
    tag = data.tag;
    var fresh = false;
    data.messages.forEach(function (message) {
      if (!known[message.id] && message.from !== "visitor") { fresh = true; if (!open) unread++; }
      upsert(message);
    });
    if (fresh) { lastActivity = Date.now(); if (open) markRead(); }
    show();
  }

  function markRead() {
    var last = order.filter(function (id) { return id.indexOf("pending:") !== 0; }).pop();
    if (!last) return;
    call("POST", "read", { message_id: last }).catch(function () { /* retried next time */ });
  }

  function upsert(message, extra) {
    var node = known[message.id];
    if (!node) {
      node = el("div");
      node.setAttribute("data-created", message.created_at || "~");
      node.setAttribute("data-id", message.id);
      known[message.id] = node;
      order.push(message.id);
      ui.log.insertBefore(node, laterThan(node.getAttribute("data-created")));
    }
    node.className = "msg " + message.from + (extra ? " " + extra : "") +
      (message.deleted ? " deleted" : "");
    node.textContent = "";
    if (message.from === "human" || message.from === "agent") {
      node.appendChild(el("span", "who", message.from === "human" ? "Team" : config.title));
    }
    node.appendChild(document.createTextNode(
      message.deleted ? "(deleted)" : message.text || message.caption || ""));
    if (!message.deleted && /^https?:\/\//.test(message.media_url || "")) {
      var link = el("a", null, " " + (message.type || "file"));
      link.href = message.media_url;
      link.target = "_blank";
      link.rel = "noopener noreferrer";
      node.appendChild(link);
    }
    if (!message.deleted && message.buttons && message.buttons.length) {
      node.appendChild(choices(message));
    }
    if (message.from === "visitor") {
      node.style.background = config.primary_color || "#1a73e8";
      node.style.color = "#fff";
    }
    refreshChoices();
    ui.log.scrollTop = ui.log.scrollHeight;
  }

  function choices(message) {
    var row = el("div", "choices");
    message.buttons.forEach(function (button) {
      var node = el("button", "choice", button.text);
      node.type = "button";
      node.style.color = node.style.borderColor = config.primary_color || "#1a73e8";
      node.onclick = function () { choose(message.id, button); };
      row.appendChild(node);
    });
    return row;
  }

  // Only the newest message's buttons, not yet pressed, can be pressed.
  function refreshChoices() {
    var nodes = ui.log.querySelectorAll("[data-created]");
    Array.prototype.forEach.call(nodes, function (node, index) {
      var off = index < nodes.length - 1 || !!pressed[node.getAttribute("data-id")];
      Array.prototype.forEach.call(node.querySelectorAll("button.choice"), function (button) {
        button.disabled = off;
      });
    });
  }

  // Messages stand in the order they were written (a poll returns them in
  // the order they changed); those still being sent ("~") stay last.
  function laterThan(created) {
    var nodes = ui.log.querySelectorAll("[data-created]");
    for (var i = 0; i < nodes.length; i++) {
      if (nodes[i].getAttribute("data-created") > created) return nodes[i];
    }
    return null;
  }

  function remove(id) {
    var node = known[id];
    if (node && node.parentNode) node.parentNode.removeChild(node);
    delete known[id];
    order = order.filter(function (known_id) { return known_id !== id; });
    refreshChoices();
  }

  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "visible" && !streaming) poll();
  });
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
