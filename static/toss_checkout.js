// The checkout page with PG_PROVIDER=toss (views/checkout.templ): opens Toss
// Payments' payment window (SDK v2, docs.tosspayments.com/sdk/v2/js) with
// the order's values from the page's data attributes, once by itself and
// again on every press of the button. Toss then sends the buyer to
// successUrl or failUrl. The sentences are the page's; this only shows them.
(function () {
  "use strict";
  var root = document.getElementById("toss-checkout");
  if (!root) return;
  var d = root.dataset;
  var button = document.getElementById("toss-pay");
  function show(id) {
    ["toss-closed", "toss-failed", "toss-unavailable"].forEach(function (other) {
      document.getElementById(other).hidden = other !== id;
    });
  }
  if (typeof window.TossPayments !== "function") {
    show("toss-unavailable"); // the SDK's script did not load
    return;
  }
  var payment = window.TossPayments(d.clientKey).payment({ customerKey: d.customerKey });
  function pay() {
    button.disabled = true;
    show(null);
    payment.requestPayment({
      method: "CARD",
      amount: { currency: d.currency, value: Number(d.amount) },
      orderId: d.orderId,
      orderName: d.orderName,
      successUrl: d.successUrl,
      failUrl: d.failUrl,
      customerEmail: d.customerEmail,
      customerName: d.customerName
    }).catch(function (err) {
      // Closing the window: USER_CANCEL from the SDK, PAY_PROCESS_CANCELED
      // in failUrl's terms.
      var code = err && err.code;
      show(code === "USER_CANCEL" || code === "PAY_PROCESS_CANCELED" ? "toss-closed" : "toss-failed");
    }).then(function () {
      button.disabled = false;
    });
  }
  button.addEventListener("click", pay);
  button.disabled = false;
  pay();
})();
