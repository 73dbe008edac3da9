// scansnap: every figure of a page opens at full size when tapped or clicked. On a phone a 1,300-pixel figure
// is shrunk to the column (its labels a few pixels tall); its own PNG, opened alone, can be zoomed.
document.addEventListener("DOMContentLoaded", function () {
  "use strict";
  document.querySelectorAll("article.bd-article img").forEach(function (img) {
    var src = img.getAttribute("src") || "";
    if (img.closest("a") || !/\.png$/i.test(src)) return;  // a thumbnail that already links, or not a figure
    var link = document.createElement("a");
    link.href = src;
    link.className = "sg-figure-link";
    link.title = "open the figure at full size";
    img.parentNode.insertBefore(link, img);
    link.appendChild(img);
  });
});
