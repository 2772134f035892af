/* SPDX-License-Identifier: MIT */
/* The flame graph SVG's script, embedded by profile/flame-svg.c (W, PAD and CHAR_W are defined before it). */
"use strict";
var frames = [], details, matched, zoomed = null, pattern = null;
function fit(f, w) {
  var room = Math.floor((w - 6) / CHAR_W), s = f.name;
  if (room < 3) s = "";
  else if (s.length > room) s = s.substring(0, room - 2) + "..";
  f.t.textContent = s;
}
function place(f, x, w) {
  f.r.setAttribute("x", x); f.r.setAttribute("width", w);
  f.t.setAttribute("x", x + 3); fit(f, w);
}
function zoom(z) {
  var scale = (W - 2 * PAD) / z.w, eps = 1e-6;
  zoomed = z;
  document.getElementById("unzoom").style.display = "";
  frames.forEach(function (f) {
    var inside = f.x >= z.x - eps && f.x + f.w <= z.x + z.w + eps;
    var around = f.x <= z.x + eps && f.x + f.w >= z.x + z.w - eps;
    if (f.y <= z.y && inside) {
      f.g.style.display = ""; f.g.style.opacity = "";
      place(f, PAD + (f.x - z.x) * scale, f.w * scale);
    } else if (f.y > z.y && around) {
      f.g.style.display = ""; f.g.style.opacity = "0.5";
      place(f, PAD, W - 2 * PAD);
    } else {
      f.g.style.display = "none";
    }
  });
  if (pattern) search(pattern);
}
function unzoom() {
  zoomed = null;
  document.getElementById("unzoom").style.display = "none";
  frames.forEach(function (f) {
    f.g.style.display = ""; f.g.style.opacity = "";
    place(f, f.x, f.w);
  });
  if (pattern) search(pattern);
}
function search(re) {
  var spans = [], sum = 0, end = -1;
  pattern = re;
  frames.forEach(function (f) {
    var hit = re !== null && re.test(f.name);
    f.r.setAttribute("fill", hit ? "rgb(200,60,230)" : f.fill);
    if (hit) spans.push([f.x, f.x + f.w]);
  });
  /* nested matches overlap: count each stretch of the width once */
  spans.sort(function (a, b) { return a[0] - b[0]; });
  spans.forEach(function (s) {
    if (s[1] <= end) return;
    sum += s[1] - Math.max(s[0], end);
    end = s[1];
  });
  matched.textContent = re === null ? "" :
    "Matched: " + (100 * sum / (W - 2 * PAD)).toFixed(2) + "%";
  document.getElementById("unsearch").style.display = re === null ? "none" : "";
}
function ask() {
  var s = window.prompt("Search for (regular expression):", "");
  if (s === null || s === "") return;
  try { search(new RegExp(s)); } catch (e) { window.alert(String(e)); }
}
function init() {
  var gs = document.getElementsByTagName("g");
  details = document.getElementById("details");
  matched = document.getElementById("matched");
  for (var i = 0; i < gs.length; i++) {
    var g = gs[i];
    if (g.getAttribute("class") !== "f") continue;
    var title = g.getElementsByTagName("title")[0].textContent;
    var r = g.getElementsByTagName("rect")[0];
    var m = /^([\s\S]*) \([^()]*\)$/.exec(title);
    var f = { g: g, r: r, t: g.getElementsByTagName("text")[0],
      name: m ? m[1] : title, title: title, fill: r.getAttribute("fill"),
      x: +r.getAttribute("x"), w: +r.getAttribute("width"), y: +r.getAttribute("y") };
    frames.push(f);
    (function (f) {
      g.addEventListener("click", function () { zoom(f); });
      g.addEventListener("mouseover", function () { details.textContent = f.title; });
      g.addEventListener("mouseout", function () { details.textContent = " "; });
    })(f);
  }
  document.getElementById("unzoom").addEventListener("click", unzoom);
  document.getElementById("search").addEventListener("click", ask);
  document.getElementById("unsearch").addEventListener("click", function () { search(null); });
  window.addEventListener("keydown", function (e) {
    if ((e.ctrlKey || e.metaKey) && e.key === "f") { e.preventDefault(); ask(); }
    else if (e.key === "Escape") { if (zoomed) unzoom(); else search(null); }
  });
}
window.addEventListener("load", init);
