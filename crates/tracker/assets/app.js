(function () {
  const form = document.getElementById('filters');
  const rows = document.getElementById('rows');
  const every = Number(document.body.dataset.refresh || '10') * 1000;
  function cell(tr, text, cls) {
    const td = document.createElement('td');
    if (cls) td.className = cls;
    td.textContent = text;
    tr.appendChild(td);
    return td;
  }
  function name(td, runs) {
    const outer = document.createElement('span');
    outer.className = 'name';
    for (const r of runs) {
      const s = document.createElement('span');
      if (r.color) s.style.color = r.color;
      if (r.half_alpha) s.style.opacity = '.5';
      if (r.icon) { s.className = 'icon'; s.title = r.icon; }
      s.textContent = r.text;
      outer.appendChild(s);
    }
    td.appendChild(outer);
  }
  async function load() {
    const params = new URLSearchParams(new FormData(form));
    let data;
    try {
      const res = await fetch('/api/servers?' + params.toString());
      if (!res.ok) return;
      data = await res.json();
    } catch (e) { return; }
    const body = document.createElement('tbody');
    body.id = 'rows';
    let players = 0, online = 0;
    for (const s of data.servers) {
      const tr = document.createElement('tr');
      tr.className = 'server ' + s.status;
      tr.dataset.addr = s.addr;
      const a = document.createElement('a');
      a.href = '/server/' + encodeURIComponent(s.addr);
      a.textContent = s.addr;
      cell(tr, '').appendChild(a);
      cell(tr, s.status);
      name(cell(tr, ''), s.name_runs);
      cell(tr, s.map || '-');
      cell(tr, s.game);
      cell(tr, s.status === 'online' ? s.num_players + '/' + s.max_players : '-', 'num players');
      cell(tr, s.rtt_ms == null ? '-' : s.rtt_ms.toFixed(1), 'num ping');
      body.appendChild(tr);
      if (s.status === 'online') { online += 1; players += s.num_players; }
    }
    document.getElementById('rows').replaceWith(body);
    document.getElementById('summary').textContent =
      online + ' of ' + data.servers.length + ' servers online, ' + players + ' players';
    document.getElementById('updated').textContent = 'updated ' + new Date().toISOString();
  }
  form.addEventListener('input', function () {
    history.replaceState(null, '', '?' + new URLSearchParams(new FormData(form)).toString());
    load();
  });
  form.addEventListener('submit', function (e) { e.preventDefault(); load(); });
  setInterval(load, every);
  load();
})();
