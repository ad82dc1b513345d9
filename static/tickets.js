// Shows the order page's print button and prints the page when it is
// pressed: printed, the page is its tickets, one a page (app.css). Without
// JavaScript the button stays hidden and the browser's own Print does the
// same.
(function () {
  document.querySelectorAll("[data-print]").forEach(function (button) {
    button.hidden = false;
    button.addEventListener("click", function () { window.print(); });
  });
})();
