// The seat map page (views/seats.templ): the page is the same for every fan
// (the server keeps it rendered), so this file brings in the fan's part: the
// hold panel (the page's own URL as htmx asks for it) and the statuses from
// /events/{id}/seats/status, at once and then every few seconds without a
// reload. It also drives choosing seats with the mouse or the keyboard (Tab
// to the map, arrow keys to move, Enter or Space to choose), the countdown of
// the fan's holds from the TTL the server read from Redis (resynchronised on
// each refresh; at zero the seats show as free), and zoom. Seats carry no
// description each: a seat's comes from its group's data-desc, with its row
// and number from its label, and is given to the seat (role checkbox,
// aria-label) while the browser is idle, or when it gets the focus. Every
// sentence comes from the page; this file moves them.
(function () {
  "use strict";
  var REFRESH_MS = 3000;
  var ZOOMS = [1, 1.5, 2, 3, 4, 6, 8];

  var page = document.querySelector(".seatmap-page");
  if (!page) return;
  var host = document.getElementById("seatmap-host");
  if (!host.shadowRoot) { // a browser without declarative shadow DOM
    host.attachShadow({ mode: "open" }).appendChild(host.querySelector("template").content);
  }
  var svg = host.shadowRoot.getElementById("seatmap");
  var box = page.querySelector("[data-map-box]");
  var form = document.getElementById("hold-form");
  var list = form.querySelector("[data-selection]");
  var empty = form.querySelector("[data-selection-empty]");
  var submit = form.querySelector("[type=submit]");
  var itemTemplate = document.getElementById("selection-item");
  var panel = document.getElementById("hold-panel");
  var zoomControls = page.querySelector("[data-zoom-controls]");

  // Every seat, its position (for arrow keys) and its current status.
  var seats = svg.querySelectorAll("circle[data-id]");
  var byId = new Map(), indexOf = new Map();
  var xs = new Float64Array(seats.length), ys = new Float64Array(seats.length);
  for (var i = 0; i < seats.length; i++) {
    var el = seats[i];
    byId.set(el.getAttribute("data-id"), el);
    indexOf.set(el, i);
    xs[i] = +el.getAttribute("cx");
    ys[i] = +el.getAttribute("cy");
  }
  var statuses = new Map(); // seat id -> "held", "sold" or "mine"; free seats are absent

  // A seat's description, from its group's data-desc (with "<r>" and "<n>"
  // for the row and number: no section's name holds < or >) and its label
  // "section-row-number" (rows and numbers are digits only).
  function describe(el) {
    var parts = el.getAttribute("data-id").split("-");
    var number = parts.pop(), row = parts.pop();
    return el.parentNode.getAttribute("data-desc").replace("<r>", row).replace("<n>", number);
  }
  function label(el) {
    if (el.hasAttribute("aria-label")) return;
    el.setAttribute("role", "checkbox");
    el.setAttribute("aria-label", describe(el));
    el.setAttribute("aria-checked", chosen.has(el.getAttribute("data-id")) ? "true" : "false");
  }
  function labelAll(from) {
    var to = Math.min(from + 1500, seats.length);
    for (var i = from; i < to; i++) label(seats[i]);
    if (to < seats.length) idle(function () { labelAll(to); });
  }
  var idle = window.requestIdleCallback ? window.requestIdleCallback.bind(window) : function (f) { return setTimeout(f, 50); };
  svg.addEventListener("focusin", function (e) {
    if (e.target.hasAttribute && e.target.hasAttribute("data-id")) label(e.target);
  });

  // The selection: seat id -> its item in the hold form.
  var chosen = new Map();

  function seatsLeft() {
    var state = panel.querySelector("[data-left]");
    return state ? parseInt(state.getAttribute("data-left"), 10) : 0;
  }

  function showSelection() {
    empty.hidden = chosen.size > 0;
    submit.disabled = chosen.size === 0;
  }

  function choose(el) {
    var id = el.getAttribute("data-id");
    if (chosen.has(id)) {
      unchoose(id);
      return;
    }
    if (el.hasAttribute("aria-disabled")) return;
    if (chosen.size >= seatsLeft()) {
      var state = panel.querySelector(".hold-state");
      if (state) {
        state.classList.add("flash");
        setTimeout(function () { state.classList.remove("flash"); }, 1500);
      }
      return;
    }
    var item = itemTemplate.content.firstElementChild.cloneNode(true);
    label(el);
    item.querySelector("[data-name]").textContent = el.getAttribute("aria-label");
    item.querySelector("input").value = id;
    item.setAttribute("data-seat", id);
    list.appendChild(item);
    chosen.set(id, item);
    el.classList.add("sel");
    el.setAttribute("aria-checked", "true");
    showSelection();
  }

  function unchoose(id) {
    var item = chosen.get(id);
    if (!item) return;
    item.remove();
    chosen.delete(id);
    var el = byId.get(id);
    if (el) {
      el.classList.remove("sel");
      el.setAttribute("aria-checked", "false");
    }
    showSelection();
  }

  function setStatus(id, status) {
    var el = byId.get(id);
    if (!el) return;
    if (status) {
      unchoose(id);
      el.setAttribute("class", status);
      el.setAttribute("aria-disabled", "true");
      statuses.set(id, status);
    } else {
      el.classList.remove("held", "sold", "mine");
      el.removeAttribute("aria-disabled");
      statuses.delete(id);
    }
  }

  function applyStatuses(next) {
    statuses.forEach(function (status, id) {
      if (next[id] !== status) setStatus(id, null);
    });
    Object.keys(next).forEach(function (id) {
      if (statuses.get(id) !== next[id]) setStatus(id, next[id]);
    });
  }

  // Keyboard: one tab stop in the map (roving tabindex), moved by the arrow keys.
  var current = svg.querySelector("circle[tabindex]");
  function focusSeat(el) {
    label(el);
    if (current && current !== el) current.removeAttribute("tabindex");
    el.setAttribute("tabindex", "0");
    current = el;
    el.focus();
  }
  function nearest(from, dx, dy) {
    var i = indexOf.get(from), best = null, bestScore = Infinity;
    for (var j = 0; j < xs.length; j++) {
      var vx = xs[j] - xs[i], vy = ys[j] - ys[i];
      var along = vx * dx + vy * dy;
      if (along <= 0.5) continue;
      var score = along + 3 * Math.abs(vx * dy - vy * dx);
      if (score < bestScore) { bestScore = score; best = seats[j]; }
    }
    return best;
  }
  var arrows = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] };
  svg.addEventListener("keydown", function (e) {
    var el = e.target;
    if (!el.hasAttribute || !el.hasAttribute("data-id")) return;
    if (e.key === "Enter" || e.key === " ") {
      e.preventDefault();
      choose(el);
    } else if (arrows[e.key]) {
      e.preventDefault();
      var next = nearest(el, arrows[e.key][0], arrows[e.key][1]);
      if (next) focusSeat(next);
    }
  });

  // Zoom: buttons, a pinch, or a click on a section's outline to zoom into
  // it.
  var zoom = 1;
  function zoomTo(level, fx, fy) {
    if (fx === undefined) {
      fx = (box.scrollLeft + box.clientWidth / 2) / host.clientWidth;
      fy = (box.scrollTop + box.clientHeight / 2) / host.clientHeight;
    }
    zoom = level;
    host.style.setProperty("--zoom", String(level));
    box.scrollLeft = fx * host.clientWidth - box.clientWidth / 2;
    box.scrollTop = fy * host.clientHeight - box.clientHeight / 2;
  }
  zoomControls.addEventListener("click", function (e) {
    var b = e.target.closest("[data-zoom]");
    if (!b) return;
    var how = b.getAttribute("data-zoom");
    if (how === "in") zoomTo(ZOOMS.find(function (z) { return z > zoom; }) || Math.max(zoom, ZOOMS[ZOOMS.length - 1]));
    else if (how === "out") zoomTo(ZOOMS.slice().reverse().find(function (z) { return z < zoom; }) || 1);
    else zoomTo(1, 0.5, 0.5);
  });

  svg.addEventListener("click", function (e) {
    var el = e.target;
    if (el.hasAttribute("data-id")) {
      focusSeat(el);
      choose(el);
    } else if (el.classList.contains("section-shape")) {
      var r = svg.getBoundingClientRect();
      zoomTo(Math.max(zoom, sectionZoom()), (e.clientX - r.left) / r.width, (e.clientY - r.top) / r.height);
    }
  });

  // sectionZoom is the zoom at which seats are a finger's width apart (48
  // CSS pixels: the 44 of a touch target, and a margin), so that a tap on a
  // section's outline opens it large enough to tap a seat; at least 4.
  var TARGET = 48, MAX_ZOOM = 24;
  function sectionZoom() {
    var pitch = parseFloat(box.getAttribute("data-seat-pitch")) * svg.getScreenCTM().a / zoom;
    return Math.min(MAX_ZOOM, Math.max(4, TARGET / pitch));
  }

  // Pinch to zoom with two fingers (pointer events); one finger pans the
  // map by scrolling its box, as the browser does by itself (touch-action in
  // seatmap.css leaves pinching to this script).
  var pointers = new Map(), pinch = null;
  function spread() {
    var p = Array.from(pointers.values());
    return { d: Math.hypot(p[0].x - p[1].x, p[0].y - p[1].y), x: (p[0].x + p[1].x) / 2, y: (p[0].y + p[1].y) / 2 };
  }
  box.addEventListener("pointerdown", function (e) {
    if (e.pointerType !== "touch") return;
    pointers.set(e.pointerId, { x: e.clientX, y: e.clientY });
    if (pointers.size === 2) pinch = { s: spread(), zoom: zoom };
  });
  box.addEventListener("pointermove", function (e) {
    if (!pointers.has(e.pointerId)) return;
    pointers.set(e.pointerId, { x: e.clientX, y: e.clientY });
    if (!pinch || pointers.size !== 2) return;
    var now = spread(), r = host.getBoundingClientRect();
    var level = Math.min(MAX_ZOOM, Math.max(1, pinch.zoom * now.d / Math.max(pinch.s.d, 1)));
    zoomTo(level, (now.x - r.left) / r.width, (now.y - r.top) / r.height);
  });
  ["pointerup", "pointercancel", "pointerleave"].forEach(function (type) {
    box.addEventListener(type, function (e) {
      pointers.delete(e.pointerId);
      if (pointers.size < 2) pinch = null;
    });
  });
  list.addEventListener("click", function (e) {
    var b = e.target.closest("[data-remove]");
    if (b) unchoose(b.closest("li").getAttribute("data-seat"));
  });

  // The countdown of the fan's holds: from the TTL in ms that the server read
  // from Redis, on the browser's monotonic clock, never its wall clock.
  var deadline = null, timer = null;
  // The words come from the page, in its language (data-fmt-h, -m, -s).
  function format(ms, el) {
    var s = Math.ceil(ms / 1000);
    var pad = function (n) { return (n < 10 ? "0" : "") + n; };
    var f = function (name) { return el.getAttribute("data-fmt-" + name); };
    if (s >= 3600) return f("h").replace("{h}", Math.floor(s / 3600)).replace("{m}", pad(Math.floor((s % 3600) / 60)));
    if (s >= 60) return f("m").replace("{m}", Math.floor(s / 60)).replace("{s}", pad(s % 60));
    return f("s").replace("{s}", s);
  }
  function startCountdown(ttl) {
    var el = panel.querySelector("[data-ttl-ms]");
    if (ttl === undefined && el) ttl = parseInt(el.getAttribute("data-ttl-ms"), 10);
    deadline = el && ttl > 0 ? performance.now() + ttl : null;
    clearTimeout(timer);
    tick();
  }
  function tick() {
    var el = panel.querySelector("[data-ttl-ms]");
    if (!el || deadline === null) return;
    var left = deadline - performance.now();
    el.querySelector("[data-countdown]").textContent = format(Math.max(0, left), el);
    if (left > 0) {
      timer = setTimeout(tick, Math.min(250, left));
      return;
    }
    deadline = null;
    statuses.forEach(function (status, id) {
      if (status === "mine") setStatus(id, null);
    });
    el.hidden = true;
    var ended = panel.querySelector("[data-countdown-ended]");
    if (ended) ended.hidden = false;
    refresh();
  }

  // The refresh: statuses of every seat that is not free, the fan's holds
  // and their TTL; the hold panel is reloaded when the fan's holds changed.
  var refreshing = false, refreshTimer = null;
  function shownMine() {
    var state = panel.querySelector("[data-mine]");
    return state ? state.getAttribute("data-mine") : "[]";
  }
  function loadPanel() {
    return fetch(page.getAttribute("data-panel-url"), { headers: { "HX-Request": "true" }, credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) {
        // A refresh that began before the fan's last hold or release and
        // was answered after it asks for the panel again, which then shows
        // the same holds: keep the panel as it is, and with it a tap on it
        // in progress (replaced under the finger, the check-out button
        // would lose the tap).
        var next = document.createElement("template");
        next.innerHTML = html;
        var mine = next.content.querySelector("[data-mine]");
        if (mine && panel.querySelector("[data-mine]") && mine.getAttribute("data-mine") === shownMine()) return;
        panel.innerHTML = html;
        if (window.htmx) window.htmx.process(panel);
        startCountdown();
      });
  }
  // The admin's broadcast to the event's fans, as text ("" hides it).
  var broadcast = page.querySelector("[data-broadcast]");
  function showBroadcast(message) {
    broadcast.querySelector("[data-broadcast-message]").textContent = message || "";
    broadcast.hidden = !message;
  }
  function refresh() {
    clearTimeout(refreshTimer);
    if (refreshing) return Promise.resolve();
    refreshing = true;
    var sent = performance.now();
    return fetch(page.getAttribute("data-status-url"), { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (r) {
        if (r.status === 403) { window.location.reload(); return Promise.reject(r.status); }
        return r.ok ? r.json() : Promise.reject(r.status);
      })
      .then(function (d) {
        applyStatuses(d.statuses);
        showBroadcast(d.broadcast);
        if (JSON.stringify(d.holds.seats) !== shownMine()) return loadPanel();
        if (d.holds.seats.length > 0) startCountdown(d.holds.ttl_ms - (performance.now() - sent) / 2);
      })
      .catch(function () {})
      .then(function () {
        refreshing = false;
        refreshTimer = setTimeout(refresh, REFRESH_MS);
      });
  }

  // htmx answers a refused hold with the panel and a 4xx status: show it.
  document.body.addEventListener("htmx:beforeSwap", function (e) {
    if (e.detail.target === panel && e.detail.xhr.status >= 400 && e.detail.xhr.status < 500) {
      e.detail.shouldSwap = true;
      e.detail.isError = false;
    }
  });
  document.body.addEventListener("htmx:afterSwap", function (e) {
    if (e.detail.target !== panel) return;
    if (e.detail.elt === form && e.detail.xhr.status === 200) {
      Array.from(chosen.keys()).forEach(unchoose);
    }
    startCountdown();
    refresh();
  });

  svg.classList.add("js");
  form.hidden = false;
  zoomControls.hidden = false;
  showSelection();
  performance.mark("seatmap-drawn");
  // The fan's part: the hold panel and the statuses, at once; the map is
  // ready once both are in (or failed: the refresh tries again).
  Promise.all([loadPanel().catch(function () {}), refresh()]).then(function () {
    performance.mark("seatmap-ready");
    idle(function () { labelAll(0); });
  });
})();
