(function () {
  "use strict";
  var errors = window.__reportErrors || [];

  function all(sel, root) { return Array.prototype.slice.call((root || document).querySelectorAll(sel)); }

  function setup() {
    var svg = document.getElementById("timeline");
    if (svg) {
      var x0 = parseFloat(svg.getAttribute("data-x0"));
      var w = parseFloat(svg.getAttribute("data-w"));
      var end = parseFloat(svg.getAttribute("data-end"));
      var split = parseFloat(svg.getAttribute("data-split")) || 0;
      var frac = parseFloat(svg.getAttribute("data-split-frac")) || 1;
      // the inverse of the (piecewise linear) time scale
      var timeAt = function (x) {
        var u = (x - x0) / w;
        if (split > 0) {
          return u <= frac ? u / frac * split : split + (u - frac) / (1 - frac) * (end - split);
        }
        return u * end;
      };
      var cursor = document.getElementById("cursor");
      var cline = cursor.querySelector("line");
      var ctext = cursor.querySelector("text");
      // a time cursor that follows the mouse
      svg.addEventListener("mousemove", function (ev) {
        var box = svg.getBoundingClientRect();
        var scale = box.width / svg.viewBox.baseVal.width;
        var x = (ev.clientX - box.left) / scale;
        if (x < x0 || x > x0 + w) { cursor.setAttribute("visibility", "hidden"); return; }
        var t = timeAt(x);
        cline.setAttribute("x1", x); cline.setAttribute("x2", x);
        ctext.setAttribute("x", x + 3);
        ctext.textContent = t.toFixed(2) + " s";
        cursor.setAttribute("visibility", "visible");
      });
      svg.addEventListener("mouseleave", function () { cursor.setAttribute("visibility", "hidden"); });

      // pick out one owner's bars
      var buttons = all("#legend button.owner");
      buttons.forEach(function (b) {
        b.addEventListener("click", function () {
          var o = b.getAttribute("data-owner");
          var on = !b.classList.contains("on");
          buttons.forEach(function (x) { x.classList.remove("on"); });
          all(".bar.on, .held.on, .proc.on", svg).forEach(function (e) { e.classList.remove("on"); });
          svg.classList.toggle("focus", on);
          if (on) {
            b.classList.add("on");
            all(".o" + o, svg).forEach(function (e) { e.classList.add("on"); });
          }
        });
      });

      // hovering a worker lane shows its faults across the shard lanes
      all("g.slot", svg).forEach(function (g) {
        var slot = g.getAttribute("data-slot");
        g.addEventListener("mouseenter", function () {
          svg.classList.add("focus-slot");
          all('rect.across[data-slot="' + slot + '"]', svg).forEach(function (e) { e.classList.add("on"); });
        });
        g.addEventListener("mouseleave", function () {
          svg.classList.remove("focus-slot");
          all("rect.across.on", svg).forEach(function (e) { e.classList.remove("on"); });
        });
      });

      // "show on the timeline" flashes the violation's mark
      all("a.jump").forEach(function (a) {
        a.addEventListener("click", function () {
          var m = document.getElementById(a.getAttribute("href").slice(1));
          if (m) {
            m.classList.add("flash");
            setTimeout(function () { m.classList.remove("flash"); }, 2500);
          }
        });
      });
    }

    // sortable sweep table
    all("table.sortable").forEach(function (table) {
      var heads = all("thead th", table);
      heads.forEach(function (th, col) {
        th.addEventListener("click", function () {
          var asc = !th.classList.contains("asc");
          heads.forEach(function (h) { h.classList.remove("asc", "desc"); });
          th.classList.add(asc ? "asc" : "desc");
          var body = table.tBodies[0];
          var rows = Array.prototype.slice.call(body.rows);
          rows.sort(function (a, b) {
            var ca = a.cells[col], cb = b.cells[col];
            var va = ca ? (ca.getAttribute("data-v") || ca.textContent) : "";
            var vb = cb ? (cb.getAttribute("data-v") || cb.textContent) : "";
            var na = parseFloat(va), nb = parseFloat(vb);
            var c = (!isNaN(na) && !isNaN(nb)) ? na - nb : String(va).localeCompare(String(vb));
            return asc ? c : -c;
          });
          rows.forEach(function (r) { body.appendChild(r); });
        });
      });
    });

    // click a command to copy it
    all("code.copy").forEach(function (c) {
      c.addEventListener("click", function () {
        var done = function () { c.classList.add("copied"); setTimeout(function () { c.classList.remove("copied"); }, 1200); };
        try {
          if (navigator.clipboard && navigator.clipboard.writeText) {
            navigator.clipboard.writeText(c.textContent).then(done, function () {});
          }
        } catch (e) { /* no clipboard on file:// in some browsers */ }
      });
    });

    return svg;
  }

  var svg = null;
  try {
    svg = setup();
  } catch (e) {
    errors.push(String(e && e.message ? e.message : e));
  }
  var body = document.body;
  if (svg) {
    body.setAttribute("data-lanes", String(all("g.lane", svg).length));
    body.setAttribute("data-bars", String(all("rect.bar", svg).length));
  }
  body.setAttribute("data-timeline", svg ? "yes" : "no");
  var box = document.getElementById("script-errors");
  if (errors.length) {
    box.textContent = "script errors:\n" + errors.join("\n");
    box.hidden = false;
    body.setAttribute("data-rendered", "error");
  } else {
    body.setAttribute("data-rendered", "ok");
  }
})();
