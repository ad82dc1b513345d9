// The waiting room (views/queue.templ): htmx's sse extension swaps in the
// position fragments; when the stream fails this turns on the status poll
// (hx-trigger="every 2s [boQueuePoll()]") until the stream is back, and it
// leads an admitted fan to the seat map (data-admitted-href) with no reload.
(function () {
  var polling = false;
  var leaving = false;
  function final() { return document.querySelector("[data-queue-final]") !== null; }
  window.boQueuePoll = function () { return polling && !final(); };
  function follow() {
    var el = document.querySelector("[data-admitted-href]");
    if (el && !leaving) {
      leaving = true;
      window.location.assign(el.getAttribute("data-admitted-href"));
    }
  }
  document.addEventListener("htmx:sseOpen", function () { polling = false; });
  document.addEventListener("htmx:sseError", function () { polling = true; });
  document.addEventListener("htmx:sseClose", function () { polling = !final(); });
  document.addEventListener("htmx:sseMessage", follow);
  document.addEventListener("htmx:afterSettle", follow);
  follow();
})();
