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
  // A large report holds its attempts as columns (compact.ts) and the table is drawn a page at a time.
  var T = D.table;
  var A = T ? fromTable(T) : D.attempts;
  function fromTable(T) {
    var out = new Array(T.n), x = T.dict, CODES = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_-', at = {};
    for (var z = 0; z < CODES.length; z++) at[CODES[z]] = z - 1;
    // a small column is a string, a character an attempt (compact.ts packed)
    ['set', 'phase', 'reason', 'message', 'outcome', 'grade', 'run', 'image', 'labels', 'link'].forEach(function (k) {
      var c = T[k];
      if (typeof c === 'string') { var a = new Array(c.length); for (var j = 0; j < c.length; j++) a[j] = at[c[j]]; T[k] = a; }
    });
    for (var i = 0; i < T.n; i++) {
      var s = T.set[i], coords = {}, keys = s >= 0 ? x.axes[s] : [], c = T.coords[i], tm = T.times[i];
      for (var k = 0; k < c.length; k++) coords[keys[k]] = x.value[c[k]];
      var q = tm[0] === null ? null : T.base + tm[0] * 100;
      var p = tm[1] === null ? null : (q === null ? T.base : q) + tm[1] * 100;
      var st0 = tm[2] === null ? null : (p !== null ? p : q !== null ? q : T.base) + tm[2] * 100;
      var img = x.image[T.image[i]];
      var nm = T.name[i];
      out[i] = { name: nm.charAt(0) === '!' ? nm.slice(1) : x.set[s] + '-' + nm, set: s >= 0 ? x.set[s] : null, coords: coords, labels: x.labels[T.labels[i]], phase: x.phase[T.phase[i]],
        reason: x.reason[T.reason[i]], message: x.message[T.message[i]], outcome: x.outcome[T.outcome[i]], exitCode: T.exit[i], score: T.score[i],
        grade: T.grade[i] < 0 ? null : x.grade[T.grade[i]], durationMs: T.duration[i], run: T.run[i], queuedAt: q, provisionedAt: p, startedAt: st0,
        finishedAt: st0 !== null && T.duration[i] !== null ? st0 + T.duration[i] : null, imageId: img ? img.id : null,
        image: img ? { ref: img.ref, repoDigests: img.repoDigests, pinned: img.pinned } : null };
    }
    return out;
  }
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
  // compact: the attempts in table order, those the filter keeps, and the page shown
  var order = A.map(function (a, i) { return i; }), kept = order, page = 0, per = T ? +document.getElementById('tbl').getAttribute('data-page') : 0;
  var COLS = ['name', 'set', 'coords', 'phase', 'reason', 'exitCode', 'score', 'grade', 'durationMs', 'run', 'imageId'];
  var NUM = { exitCode: 1, score: 1, durationMs: 1, run: 1 };
  function link(tr, href, text) { var a = document.createElement('a'); a.href = href; a.textContent = text; tr.appendChild(a); }
  function draw() {
    tbody.textContent = '';
    var end = Math.min(kept.length, (page + 1) * per);
    for (var n = page * per; n < end; n++) {
      var i = kept[n], a = A[i], tr = document.createElement('tr');
      tr.setAttribute('data-i', i);
      tr.className = 'o-' + a.outcome;
      COLS.forEach(function (k) {
        var td = document.createElement('td');
        if (NUM[k]) td.className = 'n';
        if (k === 'phase') {
          var sp = document.createElement('span'); sp.className = 'ph';
          if (a.phase === 'Succeeded' && a.outcome !== 'passed' && a.outcome !== 'unfinished') { td.appendChild(document.createTextNode(a.phase + ' \u00b7 ')); sp.textContent = a.outcome; }
          else sp.textContent = a.phase;
          td.appendChild(sp);
        } else if (k === 'coords') td.textContent = kv(a.coords);
        else if (k === 'durationMs') td.textContent = d(a.durationMs);
        else if (k === 'imageId') { td.textContent = a.imageId ? a.imageId.replace(/^sha256:/, '').slice(0, 12) : ''; if (a.imageId) td.title = a.imageId; }
        else td.textContent = a[k] === null || a[k] === undefined ? '' : String(a[k]);
        tr.appendChild(td);
      });
      var lk = document.createElement('td'); lk.className = 'lk';
      var l = T.link[i], base = typeof l === 'number' ? l < 0 ? null : T.dict.folder[l] + encodeURI(a.name) + '/run-' + a.run : l;
      if (base !== null) { link(lk, base + '/results/', 'results'); link(lk, base + '/logs.txt', 'logs'); link(lk, base + '/manifest.json', 'manifest'); }
      var ex = T.extra[i];
      if (ex && ex.patch) link(lk, ex.patch, 'patch');
      if (ex && ex.gradeLog) link(lk, ex.gradeLog, 'grade log');
      tr.appendChild(lk);
      tbody.appendChild(tr);
    }
  }
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
    if (T) { kept = order.filter(keep); n = kept.length; page = Math.min(page, Math.max(0, Math.ceil(n / per) - 1)); draw(); }
    rows.forEach(function (r) { var ok = keep(+r.getAttribute('data-i')); if (r.hidden === ok) r.hidden = !ok; if (ok) n++; });
    tlRows.forEach(function (r) { var ok = keep(+r.getAttribute('data-i')); if (r.hidden === ok) r.hidden = !ok; });
    document.querySelectorAll('td.c').forEach(function (td) {
      td.classList.toggle('on', !!st.cell && +td.getAttribute('data-s') === st.cell.s && +td.getAttribute('data-c') === st.cell.c);
    });
    var what = st.cell ? ' in cell ' + D.sets[st.cell.s].name + ' ' + kv(D.sets[st.cell.s].cells[st.cell.c].coords) : '';
    shown.textContent = n + ' of ' + A.length + ' attempts' + what + (T && n > per ? ' \u00b7 page ' + (page + 1) + ' of ' + Math.ceil(n / per) : '');
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
    function cmp(i, j) {
      var a = val(A[i], k), b = val(A[j], k);
      if (a === b) return 0;
      if (a === null) return 1;
      if (b === null) return -1;
      return (a < b ? -1 : 1) * dir;
    }
    if (T) { order.sort(cmp); page = 0; apply(); return; }
    rows.sort(function (x, y) { return cmp(+x.getAttribute('data-i'), +y.getAttribute('data-i')); });
    rows.forEach(function (r) { tbody.appendChild(r); });
    save();
  }
  if (T) {
    document.getElementById('prev').addEventListener('click', function () { if (page > 0) { page--; apply(); } });
    document.getElementById('next').addEventListener('click', function () { if ((page + 1) * per < kept.length) { page++; apply(); } });
  }
  document.querySelectorAll('#tbl th[data-k]').forEach(function (th) {
    th.addEventListener('click', function () {
      var k = th.getAttribute('data-k');
      sortBy(k, st.sort === k ? -st.dir : 1);
    });
  });
  q.addEventListener('input', function () { st.q = q.value; page = 0; apply(); });
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
    var el = e.target.closest ? e.target.closest('.tr[data-i] svg, td.c, #tbl tr[data-i]') : null;
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
