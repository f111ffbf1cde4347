/**
 * The report page's script (inline; its sha256 goes into the page's Content-Security-Policy).
 * Plain JavaScript over the page the renderer wrote: sorts and filters the table rows and the
 * timeline rows (by text, or by a heatmap cell), shows tooltips, and on the controller's live
 * page reloads every few seconds keeping the filter, sort and folded groups. Every string it
 * shows goes through textContent, never through HTML.
 */
export const PAGE_SCRIPT = `
(function () {
  'use strict';
  var D = JSON.parse(document.getElementById('report-data').textContent);
  var A = D.attempts;
  var KEY = 'berth-report:' + D.instance;
  var st = { q: '', cell: null, sort: null, dir: 1, closed: [] };
  try { var saved = JSON.parse(sessionStorage.getItem(KEY) || 'null'); if (saved && D.mode === 'live') st = saved; } catch (e) {}
  // A cell kept from before a reload that is no longer there (the sets changed) is dropped.
  if (st.cell && !(D.sets[st.cell.s] && D.sets[st.cell.s].cells[st.cell.c])) st.cell = null;
  function save() { try { sessionStorage.setItem(KEY, JSON.stringify(st)); } catch (e) {} }
  function kv(m) { return Object.keys(m).map(function (k) { return k + '=' + m[k]; }).join(' '); }
  var hay = A.map(function (a) { return [a.name, a.set || '', kv(a.coords), kv(a.labels), a.phase, a.reason, a.outcome].join(' ').toLowerCase(); });
  var tbody = document.querySelector('#tbl tbody');
  var rows = Array.prototype.slice.call(tbody.rows);
  var tlRows = Array.prototype.slice.call(document.querySelectorAll('.tr[data-i]'));
  var shown = document.getElementById('shown');
  var q = document.getElementById('filter');
  function cellOf(i) { var s = D.sets[st.cell.s]; return s ? s.cells[st.cell.c] : null; }
  function keep(i) {
    var a = A[i];
    if (st.q && hay[i].indexOf(st.q.toLowerCase()) < 0) return false;
    if (st.cell) {
      var s = D.sets[st.cell.s], c = cellOf(i);
      if (!s || !c || a.set !== s.name) return false;
      for (var k in c.coords) if (a.coords[k] !== c.coords[k]) return false;
    }
    return true;
  }
  function apply() {
    var n = 0;
    rows.forEach(function (r) { var ok = keep(+r.getAttribute('data-i')); if (r.hidden === ok) r.hidden = !ok; if (ok) n++; });
    tlRows.forEach(function (r) { var ok = keep(+r.getAttribute('data-i')); if (r.hidden === ok) r.hidden = !ok; });
    document.querySelectorAll('td.c').forEach(function (td) {
      td.classList.toggle('on', !!st.cell && +td.getAttribute('data-s') === st.cell.s && +td.getAttribute('data-c') === st.cell.c);
    });
    var what = st.cell ? ' in cell ' + D.sets[st.cell.s].name + ' ' + kv(D.sets[st.cell.s].cells[st.cell.c].coords) : '';
    shown.textContent = n + ' of ' + A.length + ' attempts' + what;
    save();
  }
  function val(a, k) {
    if (k === 'coords') return kv(a.coords);
    var v = a[k];
    return v === null || v === undefined ? null : v;
  }
  function sortBy(k, dir) {
    st.sort = k; st.dir = dir;
    document.querySelectorAll('#tbl th').forEach(function (th) {
      if (th.getAttribute('data-k') === k) th.setAttribute('aria-sort', dir > 0 ? 'ascending' : 'descending'); else th.removeAttribute('aria-sort');
    });
    rows.sort(function (x, y) {
      var a = val(A[+x.getAttribute('data-i')], k), b = val(A[+y.getAttribute('data-i')], k);
      if (a === b) return 0;
      if (a === null) return 1;
      if (b === null) return -1;
      return (a < b ? -1 : 1) * dir;
    });
    rows.forEach(function (r) { tbody.appendChild(r); });
    save();
  }
  document.querySelectorAll('#tbl th[data-k]').forEach(function (th) {
    th.addEventListener('click', function () {
      var k = th.getAttribute('data-k');
      sortBy(k, st.sort === k ? -st.dir : 1);
    });
  });
  q.addEventListener('input', function () { st.q = q.value; apply(); });
  document.getElementById('clear').addEventListener('click', function () { st.q = ''; st.cell = null; q.value = ''; apply(); });
  document.querySelectorAll('td.c').forEach(function (td) {
    function pick() {
      var s = +td.getAttribute('data-s'), c = +td.getAttribute('data-c');
      st.cell = st.cell && st.cell.s === s && st.cell.c === c ? null : { s: s, c: c };
      apply();
      document.getElementById('attempts').scrollIntoView();
    }
    td.addEventListener('click', pick);
    td.addEventListener('keydown', function (e) { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); pick(); } });
  });
  document.querySelectorAll('.tl details[data-g]').forEach(function (d) {
    var g = d.getAttribute('data-g');
    if (st.closed.indexOf(g) >= 0) d.open = false;
    d.addEventListener('toggle', function () {
      st.closed = st.closed.filter(function (x) { return x !== g; });
      if (!d.open) st.closed.push(g);
      save();
    });
  });
  var tip = document.getElementById('tip');
  function t(v) { return v === null ? '-' : new Date(v).toISOString().replace('T', ' ').replace(/\\.\\d+Z$/, 'Z'); }
  function d(x) { return x === null ? '-' : x < 1000 ? x + 'ms' : (x / 1000).toFixed(1) + 's'; }
  function tipFor(el) {
    if (el.hasAttribute('data-i')) {
      var a = A[+el.getAttribute('data-i')];
      return [a.name, (a.set ? 'set ' + a.set + '  ' + kv(a.coords) : 'no set'), a.phase + (a.reason ? ' (' + a.reason + ')' : '') + '  ' + a.outcome + '  run ' + a.run,
        'waiting from ' + t(a.queuedAt), 'provisioning from ' + t(a.provisionedAt), 'started ' + t(a.startedAt), 'finished ' + t(a.finishedAt) + '  duration ' + d(a.durationMs),
        a.imageId ? 'image ' + a.image.ref + ' ' + a.imageId + (a.image.pinned ? ' (pinned)' : '') + (a.image.repoDigests.length ? '  ' + a.image.repoDigests.join(', ') : '') : '',
        a.message ? 'message: ' + a.message : ''].filter(Boolean).join('\\n');
    }
    var s = D.sets[+el.getAttribute('data-s')], c = s.cells[+el.getAttribute('data-c')];
    return [s.name + '  ' + kv(c.coords), 'passed ' + c.passed + '  failed ' + c.failed + '  infra ' + c.infra + '  skipped ' + c.skipped + '  unfinished ' + c.unfinished,
      'pass rate ' + (c.passRate === null ? '-' : (c.passRate * 100).toFixed(1) + '%'), 'click to filter the attempts'].join('\\n');
  }
  document.addEventListener('mousemove', function (e) {
    var el = e.target.closest ? e.target.closest('.tr[data-i] svg, td.c') : null;
    if (el && el.tagName.toLowerCase() === 'svg') el = el.parentNode;
    if (!el) { tip.hidden = true; return; }
    tip.textContent = tipFor(el);
    tip.hidden = false;
    tip.style.left = Math.min(e.clientX + 14, window.innerWidth - tip.offsetWidth - 4) + 'px';
    tip.style.top = Math.min(e.clientY + 14, window.innerHeight - tip.offsetHeight - 4) + 'px';
  });
  q.value = st.q;
  if (st.sort) sortBy(st.sort, st.dir);
  apply();
  if (D.mode === 'live') {
    var auto = document.getElementById('auto');
    var timer = setTimeout(function () { location.reload(); }, 5000);
    auto.addEventListener('change', function () { clearTimeout(timer); if (auto.checked) timer = setTimeout(function () { location.reload(); }, 5000); });
  }
})();
`;
