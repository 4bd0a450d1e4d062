// kubegpu serve: the only script. Filters submit on change; hovering a GPU device shows its pods.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("form.filters select").forEach(function (s) {
    s.addEventListener("change", function () { s.form.submit(); });
  });
  var box = document.getElementById("hover");
  if (!box) { return; }
  document.querySelectorAll(".map .dev").forEach(function (cell) {
    var title = cell.getAttribute("title") || "";
    cell.addEventListener("mouseenter", function () {
      cell.setAttribute("data-title", title);
      cell.removeAttribute("title");
      var pods = cell.getAttribute("data-pods");
      var cls = cell.getAttribute("data-class");
      box.textContent = cell.getAttribute("data-node") + " GPU " + cell.getAttribute("data-device") + ": " +
        cell.getAttribute("data-state") + (pods ? " \u2014 " + pods : "") +
        (cls ? " (" + cls + ", priority " + cell.getAttribute("data-priority") + ")" : "");
      box.hidden = false;
    });
    cell.addEventListener("mousemove", function (e) {
      box.style.left = (e.clientX + 14) + "px";
      box.style.top = (e.clientY + 14) + "px";
    });
    cell.addEventListener("mouseleave", function () {
      box.hidden = true;
      cell.setAttribute("title", cell.getAttribute("data-title") || title);
    });
  });
});
