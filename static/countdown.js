// Counts down every [data-countdown-seconds] element, from the number of
// seconds the server computed (never from the browser's clock, which may be
// wrong), and reloads the page at zero so that it shows what comes next.
// The words come from the element, in the page's language (data-fmt-h, -m,
// -s, with {h}, {m} and {s} for the numbers).
(function () {
  function format(s, el) {
    var pad = function (n) { return (n < 10 ? "0" : "") + n; };
    var f = function (name) { return el.getAttribute("data-fmt-" + name); };
    if (s >= 3600) return f("h").replace("{h}", Math.floor(s / 3600)).replace("{m}", pad(Math.floor((s % 3600) / 60)));
    if (s >= 60) return f("m").replace("{m}", Math.floor(s / 60)).replace("{s}", pad(s % 60));
    return f("s").replace("{s}", s);
  }
  var started = performance.now();
  var els = document.querySelectorAll("[data-countdown-seconds]");
  function tick() {
    var elapsed = Math.floor((performance.now() - started) / 1000);
    var done = false;
    els.forEach(function (el) {
      var left = Math.max(0, parseInt(el.dataset.countdownSeconds, 10) - elapsed);
      el.textContent = format(left, el);
      if (left === 0) done = true;
    });
    if (done) { window.location.reload(); return; }
    setTimeout(tick, 250);
  }
  if (els.length) tick();
})();
