// Counts down every [data-countdown-seconds] element, from the number of
// seconds the server computed (never from the browser's clock, which may be
// wrong), and reloads the page at zero so that it shows what comes next.
(function () {
  function format(s) {
    var pad = function (n) { return (n < 10 ? "0" : "") + n; };
    if (s >= 3600) return Math.floor(s / 3600) + " h " + pad(Math.floor((s % 3600) / 60)) + " min";
    if (s >= 60) return Math.floor(s / 60) + " min " + pad(s % 60) + " s";
    return s + " s";
  }
  var started = performance.now();
  var els = document.querySelectorAll("[data-countdown-seconds]");
  function tick() {
    var elapsed = Math.floor((performance.now() - started) / 1000);
    var done = false;
    els.forEach(function (el) {
      var left = Math.max(0, parseInt(el.dataset.countdownSeconds, 10) - elapsed);
      el.textContent = format(left);
      if (left === 0) done = true;
    });
    if (done) { window.location.reload(); return; }
    setTimeout(tick, 250);
  }
  if (els.length) tick();
})();
