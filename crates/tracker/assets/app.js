(function () {
  'use strict';
  const base = document.body.dataset.base || '';

  // "3 min ago", as the server writes it (format.rs `ago`).
  function ago(ms) {
    const s = Math.floor((Date.now() - ms) / 1000);
    if (s < 10) return 'just now';
    if (s < 60) return s + ' s ago';
    if (s < 3600) return Math.floor(s / 60) + ' min ago';
    if (s < 86400) return Math.floor(s / 3600) + ' h ago';
    return Math.floor(s / 86400) + ' d ago';
  }
  function timeEl(ms) {
    const t = document.createElement('time');
    const iso = new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
    t.dateTime = iso;
    t.title = iso;
    t.textContent = ago(ms);
    return t;
  }
  function refreshTimes() {
    for (const t of document.querySelectorAll('time[datetime]')) {
      const ms = Date.parse(t.dateTime);
      if (!isNaN(ms)) t.textContent = ago(ms);
    }
  }

  // Copy buttons: the Clipboard API, else the address selected for the user to copy.
  function selectText(el) {
    const range = document.createRange();
    range.selectNodeContents(el);
    const sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
    return sel;
  }
  function copy(button) {
    const text = button.dataset.copy;
    const code = button.parentNode.querySelector('code');
    const done = function () {
      button.textContent = 'copied';
      setTimeout(function () { button.textContent = 'copy'; }, 1500);
    };
    const fallback = function () {
      if (!code) return;
      selectText(code);
      try {
        if (document.execCommand('copy')) { done(); return; }
      } catch (e) { /* selected: the user copies */ }
      button.textContent = 'selected';
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, fallback);
    } else {
      fallback();
    }
  }
  document.addEventListener('click', function (e) {
    const b = e.target.closest && e.target.closest('button.copy');
    if (b) copy(b);
  });
  function showCopyButtons(root) {
    for (const b of root.querySelectorAll('button.copy')) b.hidden = false;
  }
  showCopyButtons(document);
  // The embed snippets (embed.rs): this site's paths made whole with its address.
  for (const t of document.querySelectorAll('.embed textarea')) {
    t.textContent = t.value.split(base + '/server/').join(location.origin + base + '/server/');
  }
  setInterval(refreshTimes, 15000);

  // Chart labels and captions (written in UTC) in the visitor's local time.
  function two(n) { return (n < 10 ? '0' : '') + n; }
  for (const t of document.querySelectorAll('[data-t][data-f]')) {
    const d = new Date(Number(t.dataset.t));
    if (isNaN(d.getTime())) continue;
    const day = d.toLocaleDateString(undefined, { month: 'short', day: 'numeric' });
    const hm = two(d.getHours()) + ':' + two(d.getMinutes());
    const f = t.dataset.f;
    t.textContent = f === 'hm' ? hm
      : f === 'wd' ? d.toLocaleDateString(undefined, { weekday: 'short', day: 'numeric' })
      : f === 'md' ? day : day + ' ' + hm;
  }
  for (const z of document.querySelectorAll('[data-tz]')) z.textContent = 'local time';

  const form = document.getElementById('filters');
  const rows = document.getElementById('rows');
  if (!form || !rows) return;
  const every = Number(document.body.dataset.refresh || '10') * 1000;

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text != null) e.textContent = text;
    return e;
  }
  function cell(tr, cls, text) {
    const td = el('td', cls, text);
    tr.appendChild(td);
    return td;
  }
  function name(parent, runs) {
    const outer = el('span', 'name');
    for (const r of runs) {
      const s = document.createElement('span');
      const c = r.page_color || r.color;
      if (c) s.style.color = c;
      if (r.color) s.style.setProperty('--light', r.light_color || r.color);
      if (r.half_alpha) s.style.opacity = '.5';
      if (r.icon) { s.className = 'icon'; s.title = r.icon; }
      s.textContent = r.text;
      outer.appendChild(s);
    }
    parent.appendChild(outer);
  }
  function flag(code) {
    if (!code || !/^[A-Z]{2}$/.test(code)) return null;
    const f = el('span', 'flag', String.fromCodePoint(
      0x1F1E6 + code.charCodeAt(0) - 65, 0x1F1E6 + code.charCodeAt(1) - 65));
    f.setAttribute('role', 'img');
    f.setAttribute('aria-label', code);
    f.title = code;
    return f;
  }
  function players(s) {
    if (s.status !== 'online') return '-';
    const bots = s.num_bots > 0 ? ' (+' + s.num_bots + ' bots)' : '';
    return (s.num_humans == null ? '-' : s.num_humans) + bots + '/' + s.max_players;
  }
  // A row as pages.rs `server_row` writes it.
  function row(s) {
    const tr = el('tr', 'server ' + s.status);
    tr.dataset.addr = s.addr;
    const n = cell(tr, 'name');
    const a = el('a');
    a.href = base + '/server/' + encodeURIComponent(s.addr);
    if (s.name_raw != null) name(a, s.name_runs); else a.textContent = s.addr;
    n.appendChild(a);
    if (s.status !== 'online') {
      n.appendChild(document.createTextNode(' '));
      const st = el('span', 'status', s.status);
      if (s.last_online != null) {
        st.appendChild(document.createTextNode(', answered '));
        st.appendChild(timeEl(s.last_online));
      }
      n.appendChild(st);
    }
    if (s.unlisted_since != null) {
      n.appendChild(document.createTextNode(' '));
      const u = el('span', 'status unlisted', 'not listed since ');
      u.appendChild(timeEl(s.unlisted_since));
      n.appendChild(u);
    }
    const c = cell(tr, 'country');
    const f = flag(s.country);
    if (f) {
      c.appendChild(f);
      c.appendChild(el('span', 'cc', s.country));
    } else {
      c.textContent = '-';
    }
    const pw = cell(tr, 'password');
    if (s.password === true) {
      const l = el('span', 'lock', '🔒');
      l.setAttribute('role', 'img');
      l.setAttribute('aria-label', 'password');
      l.title = 'password';
      pw.appendChild(l);
    } else if (s.password === false) {
      pw.appendChild(el('span', 'sr', 'no'));
    } else {
      const u = el('span', null, '-');
      u.title = 'the game does not say';
      pw.appendChild(u);
    }
    cell(tr, 'game opt', s.game_title || s.game);
    cell(tr, 'gametype opt', s.gametype || '');
    cell(tr, 'map', s.map || '-');
    cell(tr, 'num players', players(s));
    cell(tr, 'num ping opt', s.rtt_ms == null ? '-' : s.rtt_ms.toFixed(0));
    const ad = cell(tr, 'address opt');
    const span = el('span', 'addr');
    span.appendChild(el('code', null, s.addr));
    span.appendChild(document.createTextNode(' '));
    if (s.join_url) {
      const j = el('a', 'join', 'join');
      j.href = s.join_url;
      j.title = "join with the game's client";
      span.appendChild(j);
      span.appendChild(document.createTextNode(' '));
    }
    const b = el('button', 'copy', 'copy');
    b.type = 'button';
    b.dataset.copy = s.addr;
    b.title = 'copy the address';
    span.appendChild(b);
    ad.appendChild(span);
    return tr;
  }
  // The page's own query (sort, order, page, per_page and the filters) for the API.
  function params() {
    const p = new URLSearchParams(window.location.search);
    for (const [k, v] of new FormData(form)) {
      if (k === 'online') continue;
      p.set(k, v);
    }
    if (form.elements.online && form.elements.online.checked) p.set('online', '1');
    else p.delete('online');
    for (const [k, v] of [...p]) if (v === '') p.delete(k);
    return p;
  }
  async function load() {
    let data;
    try {
      const res = await fetch(base + '/api/servers?' + params().toString());
      if (!res.ok) return;
      data = await res.json();
    } catch (e) { return; }
    const body = document.createElement('tbody');
    body.id = 'rows';
    let humans = 0, bots = 0;
    for (const s of data.servers) {
      body.appendChild(row(s));
      if (s.status === 'online') { humans += s.num_humans || 0; bots += s.num_bots || 0; }
    }
    document.getElementById('rows').replaceWith(body);
    const from = (data.page - 1) * data.per_page + 1;
    document.getElementById('summary').textContent = data.total + ' servers' +
      (data.total > 0 ? ', ' + from + '–' + (from + data.servers.length - 1) + ' shown' : '') +
      '; ' + humans + ' humans (+' + bots + ' bots) on this page';
    document.getElementById('updated').textContent = 'updated ' + new Date().toISOString();
  }
  form.addEventListener('input', function () {
    const p = params();
    p.delete('page');
    history.replaceState(null, '', '?' + p.toString());
    load();
  });
  setInterval(load, every);
  load();
})();
