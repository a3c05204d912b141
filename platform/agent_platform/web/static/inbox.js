// The inbox's live updates: listen to /app/events and, when something
// changed, fetch this page again asking only for its regions (X-Inbox-Part),
// then swap them in. The server renders and escapes all HTML; this script
// never builds markup from strings. Without a stream, it polls.
(function () {
  "use strict";

  var main = document.getElementById("main");
  if (!main || !main.dataset.events) {
    return;
  }
  // A change to the conversation shown, or a conversation's state (a
  // handoff, an assignment, a close), is fetched within SOON_MS of the last
  // refresh; a message elsewhere only moves the list, fetched at most every
  // LIST_MS (still within the second): with hundreds of customers writing,
  // every open inbox fetching its list three times a second was most of the
  // server's work.
  var SOON_MS = 300;
  var LIST_MS = 750;
  var POLL_MS = 10000;
  var pageParts = main.dataset.parts.split(",");
  var shownConversation = main.dataset.conversation || null;
  var wanted = new Set();
  var timer = null;
  var timerDue = 0;
  var urgent = false; // a state changed since the last refresh
  var lastRefresh = 0;
  var polling = null;
  var fetching = false;

  function scrollBox() {
    return document.querySelector(".conversation-pane");
  }

  function nearBottom(box) {
    return box.scrollHeight - box.scrollTop - box.clientHeight < 80;
  }

  function toBottom() {
    var box = scrollBox();
    if (box) {
      box.scrollTop = box.scrollHeight;
    }
  }

  // A region with a form being used (focus inside, or a field changed) is
  // left alone: what a person types is never replaced under their fingers.
  function inUse(region) {
    if (region.contains(document.activeElement) && document.activeElement !== document.body) {
      return true;
    }
    var fields = region.querySelectorAll("textarea, input:not([type=hidden]), select");
    return Array.prototype.some.call(fields, function (field) {
      if (field.tagName === "SELECT") {
        return Array.prototype.some.call(field.options, function (option) {
          return option.selected !== option.defaultSelected;
        });
      }
      if (field.type === "checkbox" || field.type === "radio") {
        return field.checked !== field.defaultChecked;
      }
      return field.value !== field.defaultValue;
    });
  }

  // The focused link or control of a region, found again after the swap.
  function focusKey(region) {
    var active = document.activeElement;
    if (!active || !region.contains(active)) {
      return null;
    }
    return active.getAttribute("href") || active.id || null;
  }

  function refocus(region, key) {
    var found = Array.prototype.find.call(region.querySelectorAll("a, [id]"), function (node) {
      return node.getAttribute("href") === key || node.id === key;
    });
    if (found) {
      found.focus({ preventScroll: true });
    }
  }

  // The server shows an action's notice once (its cookie is then cleared):
  // a live refresh right after must not take it away before it is read.
  function keepNotice(current, fresh) {
    var notice = current.querySelector(".notice");
    var holder = fresh.querySelector(".holder");
    if (notice && holder && !fresh.querySelector(".notice")) {
      holder.before(notice);
    }
  }

  function swap(fresh) {
    var current = document.getElementById(fresh.id);
    if (!current || (current.hasAttribute("data-keep-while-used") && inUse(current))) {
      return;
    }
    var key = focusKey(current);
    keepNotice(current, fresh);
    current.replaceChildren.apply(current, Array.prototype.slice.call(fresh.childNodes));
    if (key) {
      refocus(current, key);
    }
  }

  function apply(html) {
    var parsed = new DOMParser().parseFromString(html, "text/html");
    var box = scrollBox();
    var stick = box && nearBottom(box);
    parsed.querySelectorAll("[data-region][id]").forEach(swap);
    if (stick) {
      toBottom();
    }
  }

  function refresh() {
    timer = null;
    if (fetching) {
      schedule([]);
      return;
    }
    var parts = Array.from(wanted);
    wanted.clear();
    urgent = false;
    if (!parts.length) {
      return;
    }
    fetching = true;
    lastRefresh = Date.now();
    fetch(window.location.href, {
      headers: { "X-Inbox-Part": parts.join(","), Accept: "text/html" },
      credentials: "same-origin",
      cache: "no-store",
    })
      .then(function (response) {
        if (response.redirected || response.status === 401) {
          window.location.reload(); // the session ended: the sign-in page
          return null;
        }
        return response.ok ? response.text() : null;
      })
      .then(function (html) {
        if (html) {
          apply(html);
        }
      })
      .catch(function () {
        // The network failed: the next change or poll tries again.
      })
      .finally(function () {
        fetching = false;
      });
  }

  // One refresh for every part wanted since the last, after its pause.
  function schedule(parts) {
    parts.forEach(function (part) {
      wanted.add(part);
    });
    var pause = wanted.has("thread") || urgent ? SOON_MS : LIST_MS;
    var due = lastRefresh + pause;
    if (timer !== null && due < timerDue) {
      window.clearTimeout(timer); // the shown conversation changed: sooner
      timer = null;
    }
    if (timer === null) {
      timerDue = due;
      timer = window.setTimeout(refresh, Math.max(0, due - Date.now()));
    }
  }

  function partsFor(changes) {
    var aboutShown = !changes.length || changes.some(function (change) {
      return change.conversation === shownConversation;
    });
    return pageParts.filter(function (part) {
      return part !== "thread" || aboutShown;
    });
  }

  function poll() {
    if (polling === null) {
      polling = window.setInterval(function () {
        schedule(pageParts);
      }, POLL_MS);
    }
  }

  function listen() {
    var source = new EventSource(main.dataset.events);
    var missed = true; // until the stream opens: since the page was rendered
    source.addEventListener("change", function (event) {
      var changes = JSON.parse(event.data);
      urgent = urgent || !changes.length || changes.some(function (change) {
        return change.event.indexOf("message.") !== 0;
      });
      schedule(partsFor(changes));
    });
    source.addEventListener("open", function () {
      if (missed) {
        schedule(pageParts); // what changed while it was not listening
      }
      missed = false;
    });
    source.addEventListener("error", function () {
      missed = true;
      if (source.readyState === EventSource.CLOSED) {
        poll(); // refused (too many open, signed out) or not a stream
      }
    });
  }

  toBottom();
  if (window.EventSource) {
    listen();
  } else {
    poll();
  }
})();
