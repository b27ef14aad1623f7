// whirl console: the page's script. No build step, no dependencies.
// Contract: whirl-console/API.md. Every string that comes from the API goes into the DOM
// through textContent / append(string) / setAttribute, never through innerHTML.
'use strict';
(function () {
  const HISTORY_CAP = 240;   // history: every sample, two minutes at 500 ms
  const LONG_CAP = 180;      // history_long: one point per 10 s, half an hour
  const LOG_CAP = 200;
  const SVGNS = 'http://www.w3.org/2000/svg';

  // ---------------------------------------------------------------- requests and token
  const TOKEN = new URLSearchParams(location.search).get('token');
  // Paths are relative so that the console also works behind a path prefix.
  function api(path) {
    if (TOKEN === null) return path;
    return path + (path.includes('?') ? '&' : '?') + 'token=' + encodeURIComponent(TOKEN);
  }
  async function getJSON(path) {
    const r = await fetch(api(path), { cache: 'no-store' });
    let body = null;
    try { body = await r.json(); } catch (_) { /* not JSON */ }
    if (!r.ok) {
      const why = body && typeof body.error === 'string' ? body.error : r.statusText;
      throw new Error(`${path}: HTTP ${r.status}${why ? ' (' + why + ')' : ''}`);
    }
    return body;
  }

  // ---------------------------------------------------------------- DOM helpers
  function h(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    if (attrs) {
      for (const [k, v] of Object.entries(attrs)) {
        if (v === null || v === undefined || v === false) continue;
        if (k === 'class') e.className = v;
        else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
        else e.setAttribute(k, v === true ? '' : String(v));
      }
    }
    for (const c of kids.flat()) {
      if (c === null || c === undefined || c === false) continue;
      e.append(c instanceof Node ? c : String(c));
    }
    return e;
  }
  function sv(tag, attrs) {
    const e = document.createElementNS(SVGNS, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    return e;
  }
  const $ = (sel, root) => (root || document).querySelector(sel);
  const str = v => (v === null || v === undefined) ? '' : String(v);
  const num = v => (typeof v === 'number' && isFinite(v)) ? v : null;
  const arr = v => Array.isArray(v) ? v : [];
  const present = (...xs) => xs.filter(x => x !== null && x !== undefined && x !== false);

  // ---------------------------------------------------------------- formatting
  function sig(v, digits) {
    // at most `digits` significant digits, no trailing zeros
    if (v === 0) return '0';
    return String(+v.toPrecision(digits || 3));
  }
  function si(v) {
    v = num(v);
    if (v === null) return '–';
    const a = Math.abs(v);
    if (a >= 1e9) return sig(v / 1e9) + 'G';
    if (a >= 1e6) return sig(v / 1e6) + 'M';
    if (a >= 1e4) return sig(v / 1e3) + 'k';
    if (Number.isInteger(v)) return String(v);
    return sig(v);
  }
  function int(v) {
    v = num(v);
    return v === null ? '–' : Math.round(v).toLocaleString('en-US');
  }
  function dur(us) {
    us = num(us);
    if (us === null) return '–';
    const a = Math.abs(us);
    if (a < 1000) return sig(us) + ' µs';
    if (a < 1e6) return sig(us / 1e3) + ' ms';
    return sig(us / 1e6) + ' s';
  }
  // axis labels for durations: one unit per axis, chosen by the axis' top
  function durAxis(us, top) {
    if (us === 0) return '0';
    if (top >= 1e6) return sig(us / 1e6) + ' s';
    if (top >= 1e3) return sig(us / 1e3) + ' ms';
    return sig(us) + ' µs';
  }
  let clockOffset = null; // Date.now() - now_ms of the latest data
  function clock(t_ms) {
    t_ms = num(t_ms);
    if (t_ms === null) return '–';
    if (clockOffset === null) return (t_ms / 1000).toFixed(1) + ' s';
    return new Date(clockOffset + t_ms).toLocaleTimeString('en-GB', { hour12: false });
  }
  function uptime(ms) {
    let s = Math.floor((num(ms) || 0) / 1000);
    const d = Math.floor(s / 86400); s -= d * 86400;
    const hh = Math.floor(s / 3600); s -= hh * 3600;
    const mm = Math.floor(s / 60); s -= mm * 60;
    return (d ? d + 'd ' : '') + (d || hh ? hh + 'h ' : '') + (d || hh || mm ? mm + 'm ' : '') + s + 's';
  }
  function bytes(v) {
    v = num(v);
    if (v === null) return 'n/a';
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i++; }
    return sig(v) + ' ' + units[i];
  }
  function percent(v) {
    v = num(v);
    return v === null ? 'n/a' : sig(v) + ' %';
  }
  function ago(ms) {
    ms = num(ms);
    if (ms === null) return '–';
    if (ms < 1000) return 'now';
    return dur(ms * 1000) + ' ago';
  }
  function relSeconds(s) {
    if (s === 0) return 'now';
    const m = Math.floor(s / 60), r = s % 60;
    return '-' + (m ? m + 'm' + (r ? r + 's' : '') : r + 's');
  }

  // ---------------------------------------------------------------- the line chart
  function niceTicks(max, count) {
    if (!(max > 0)) max = 1;
    const raw = max / count;
    const p = Math.pow(10, Math.floor(Math.log10(raw)));
    const f = raw / p;
    const step = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10) * p;
    const top = Math.ceil(max / step - 1e-9) * step;
    const ticks = [];
    for (let k = 0; k * step <= top + step * 1e-9; k++) ticks.push(+(k * step).toPrecision(12));
    return { ticks, top: ticks[ticks.length - 1] };
  }
  function timeTicks(x0, x1) {
    const span = (x1 - x0) / 1000;
    const steps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200];
    let step = steps[steps.length - 1];
    for (const s of steps) if (span / s <= 4) { step = s; break; }
    const out = [];
    for (let k = 0; x1 - k * step * 1000 >= x0 - 1e-6; k++) {
      out.push({ x: x1 - k * step * 1000, label: relSeconds(k * step) });
    }
    return out;
  }

  // createChart({ title, id, height, series: [{label, color, dash}], yFormat(v, top),
  //               fmt(v), xTicks(x0, x1, xs), dots })
  // returns { el, svg, update(xs, ys[]) , redraw() }.
  // The svg carries data-points (points drawn) and data-last-t (x of the last point).
  function createChart(o) {
    const H = o.height || 140;
    const P = { l: 50, r: 12, t: 8, b: 20 };
    const legend = h('div', { class: 'legend' });
    const svg = sv('svg', { class: 'chart-svg', role: 'img', 'aria-label': o.title,
      'data-points': 0, 'data-last-t': '' });
    if (o.id) svg.setAttribute('data-chart', o.id);
    svg.style.height = H + 'px';
    const el = h('figure', { class: 'chart' },
      h('figcaption', null, h('span', { class: 'chart-title' }, o.title), legend), svg);
    const latest = o.series.map(sd => {
      const v = h('span', { class: 'lg-val' }, '–');
      const sw = h('span', { class: 'sw' });
      sw.style.borderTopColor = sd.color;
      if (sd.dash) sw.style.borderTopStyle = 'dashed';
      legend.append(h('span', { class: 'lg' }, sw, sd.label, ' ', v));
      return v;
    });
    const fmt = o.fmt || si;
    let xs = [], ys = [];

    function draw() {
      const W = Math.round(svg.getBoundingClientRect().width) || 360;
      svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
      const n = xs.length;
      let max = 0;
      for (const s of ys) for (let j = 0; j < n; j++) {
        const v = num(s && s[j]);
        if (v !== null && v > max) max = v;
      }
      const { ticks, top } = niceTicks(max, H < 120 ? 2 : 4);
      const x0 = n ? xs[0] : 0, x1 = n ? xs[n - 1] : 1, xspan = (x1 - x0) || 1;
      const iw = W - P.l - P.r, ih = H - P.t - P.b;
      const px = x => P.l + (x - x0) / xspan * iw;
      const py = y => P.t + ih - y / top * ih;
      const kids = [];
      for (const t of ticks) {
        const y = py(t).toFixed(1);
        kids.push(sv('line', { x1: P.l, x2: W - P.r, y1: y, y2: y, class: t === 0 ? 'axis' : 'grid' }));
        const lab = sv('text', { x: P.l - 5, y: +y + 3.5, 'text-anchor': 'end', class: 'tick' });
        lab.textContent = o.yFormat ? o.yFormat(t, top) : si(t);
        kids.push(lab);
      }
      kids.push(sv('line', { x1: P.l, x2: P.l, y1: P.t, y2: P.t + ih, class: 'axis' }));
      if (n) {
        const xt = o.xTicks ? o.xTicks(x0, x1, xs) : timeTicks(x0, x1);
        for (const t of xt) {
          const x = px(t.x);
          kids.push(sv('line', { x1: x.toFixed(1), x2: x.toFixed(1), y1: P.t + ih, y2: P.t + ih + 3, class: 'axis' }));
          const anchor = x > W - P.r - 20 ? 'end' : x < P.l + 20 ? 'start' : 'middle';
          const lab = sv('text', { x: x.toFixed(1), y: H - 5, 'text-anchor': anchor, class: 'tick' });
          lab.textContent = t.label;
          kids.push(lab);
        }
      } else {
        const t = sv('text', { x: P.l + iw / 2, y: P.t + ih / 2, 'text-anchor': 'middle', class: 'empty' });
        t.textContent = 'waiting for data';
        kids.push(t);
      }
      o.series.forEach((sd, i) => {
        const s = ys[i] || [];
        let d = '', pen = false, count = 0, lastV = null;
        for (let j = 0; j < n; j++) {
          const v = num(s[j]);
          if (v === null) { pen = false; continue; }
          d += (pen ? 'L' : 'M') + px(xs[j]).toFixed(1) + ',' + py(v).toFixed(1);
          pen = true; count++; lastV = v;
        }
        if (d) {
          const path = sv('path', { d, fill: 'none', stroke: sd.color, 'stroke-width': 1.7,
            'stroke-linejoin': 'round', 'stroke-linecap': 'round' });
          if (sd.dash) path.setAttribute('stroke-dasharray', '4 3');
          kids.push(path);
        }
        if (o.dots || count === 1) {
          for (let j = 0; j < n; j++) {
            const v = num(s[j]);
            if (v !== null) kids.push(sv('circle', { cx: px(xs[j]).toFixed(1), cy: py(v).toFixed(1), r: 2.5, fill: sd.color }));
          }
        }
        latest[i].textContent = lastV === null ? '–' : fmt(lastV);
      });
      svg.replaceChildren(...kids);
      svg.setAttribute('data-points', String(n));
      svg.setAttribute('data-last-t', n ? String(xs[n - 1]) : '');
    }
    return {
      el, svg,
      update(newXs, newYs) { xs = arr(newXs); ys = arr(newYs); draw(); },
      redraw: draw,
    };
  }

  // ---------------------------------------------------------------- state and merging
  let state = null;        // the page's copy of the snapshot
  let logVersion = 0;      // bumped when controller_log changes
  let lastUpdate = null;   // Date.now() of the last data received

  function capHistory(hist, cap) {
    cap = cap || HISTORY_CAP;
    const out = {};
    if (!hist || typeof hist !== 'object') return { t_ms: [] };
    for (const [k, v] of Object.entries(hist)) if (Array.isArray(v)) out[k] = v.slice(-cap);
    if (!out.t_ms) out.t_ms = [];
    return out;
  }
  function mergeHistory(prev, add, cap) {
    cap = cap || HISTORY_CAP;
    if (!prev || !Array.isArray(prev.t_ms)) return capHistory(add, cap);
    if (!add || !Array.isArray(add.t_ms) || add.t_ms.length === 0) return prev;
    const lastT = prev.t_ms.length ? prev.t_ms[prev.t_ms.length - 1] : -Infinity;
    let start = 0; // skip points the page already has (a tick older than the snapshot)
    while (start < add.t_ms.length && !(add.t_ms[start] > lastT)) start++;
    const n = add.t_ms.length - start;
    if (n === 0) return prev;
    const prevLen = prev.t_ms.length;
    const out = {};
    const keys = new Set(Object.keys(prev).concat(Object.keys(add)));
    for (const k of keys) {
      if (!Array.isArray(prev[k]) && !Array.isArray(add[k])) continue;
      const a = Array.isArray(prev[k]) ? prev[k] : new Array(prevLen).fill(null);
      const b = Array.isArray(add[k]) ? add[k].slice(start, start + n) : new Array(n).fill(null);
      out[k] = a.concat(b).slice(-cap);
    }
    return out;
  }
  // A node or group with its two histories capped.
  function withHistories(o) {
    return Object.assign({}, o, { history: capHistory(o.history), history_long: capHistory(o.history_long, LONG_CAP) });
  }
  // A tick's node or group merged into the page's copy.
  function mergeHistories(prev, o) {
    return Object.assign({}, o, {
      history: mergeHistory(prev && prev.history, o.history),
      history_long: mergeHistory(prev && prev.history_long, o.history_long, LONG_CAP),
    });
  }
  function normalize(snap) {
    const s = Object.assign({}, snap);
    s.groups = arr(s.groups).filter(g => g && typeof g === 'object').map(withHistories);
    s.node = s.node && typeof s.node === 'object' ? withHistories(s.node) : null;
    s.controller_log = arr(s.controller_log).slice(-LOG_CAP);
    return s;
  }
  function applyTick(t) {
    if (!state || !t || typeof t !== 'object') return;
    if (num(t.now_ms) !== null && num(state.now_ms) !== null && t.now_ms <= state.now_ms) return;
    const old = new Map(state.groups.map(g => [g.name, g]));
    const groups = !Array.isArray(t.groups) ? state.groups
      : t.groups.filter(g => g && typeof g === 'object').map(g => mergeHistories(old.get(g.name), g));
    const node = t.node && typeof t.node === 'object' ? mergeHistories(state.node, t.node) : state.node;
    const added = arr(t.controller_log);
    const log = added.length ? state.controller_log.concat(added).slice(-LOG_CAP) : state.controller_log;
    if (added.length) logVersion++;
    state = Object.assign({}, state, t, { groups, node, controller_log: log });
  }

  // ---------------------------------------------------------------- connection
  let es = null;
  let loading = false;     // a snapshot request is under way: ticks wait in `pending`
  let pending = [];
  let needReload = false;  // the event stream broke: reload the snapshot when it reopens

  function setStatus(s) {
    const e = $('#status');
    if (e.dataset.state === s) return;
    e.dataset.state = s;
    e.textContent = s;
  }
  function showError(msg) {
    const e = $('#error');
    e.textContent = msg;
    e.hidden = !msg;
  }
  function noteData(d) {
    lastUpdate = Date.now();
    if (num(d.now_ms) !== null) clockOffset = lastUpdate - d.now_ms;
  }

  async function loadSnapshot() {
    loading = true;
    pending = [];
    try {
      const snap = await getJSON('api/snapshot');
      if (!snap || typeof snap !== 'object') throw new Error('api/snapshot: not an object');
      state = normalize(snap);
      logVersion++;
      noteData(snap);
      const buffered = pending;
      pending = [];
      loading = false;
      for (const t of buffered) applyTick(t);
      showError('');
      scheduleRender();
      return true;
    } catch (e) {
      loading = false;
      showError('Cannot load the snapshot: ' + e.message +
        (/HTTP 401/.test(e.message) ? ' — open the console with ?token=… in its address.' : ''));
      return false;
    }
  }

  function connect() {
    if (es) es.close();
    const src = new EventSource(api('events'));
    es = src;
    src.addEventListener('open', () => {
      if (es !== src) return;
      setStatus('live');
      if (needReload) {
        needReload = false;
        loadSnapshot().then(ok => { if (!ok) needReload = true; });
      }
    });
    src.addEventListener('tick', ev => {
      if (es !== src) return;
      let d;
      try { d = JSON.parse(ev.data); } catch (_) { return; }
      setStatus('live');
      if (loading || !state) { pending.push(d); return; }
      noteData(d);
      applyTick(d);
      scheduleRender();
    });
    src.addEventListener('error', () => {
      if (es !== src) return;
      setStatus('reconnecting');
      needReload = true;
      if (src.readyState === EventSource.CLOSED) {
        // the browser gave up (e.g. HTTP error): try again ourselves
        src.close();
        setTimeout(() => { if (es === src) connect(); }, 2000);
      }
    });
  }

  async function start() {
    while (!(await loadSnapshot())) await new Promise(r => setTimeout(r, 2000));
    connect();
  }

  // ---------------------------------------------------------------- rendering
  let renderQueued = false;
  function scheduleRender() {
    if (renderQueued) return;
    renderQueued = true;
    setTimeout(() => { renderQueued = false; render(); }, 0);
  }
  function render() {
    if (!state) return;
    renderHeader();
    renderNode();
    renderGroups();
    renderProcesses();
    renderLog();
    renderSupervisors();
    renderDeadLetters();
    renderSlowTurns();
    renderBenchPanel();
    renderFooter();
  }

  const TOTALS = [
    ['live processes', s => s.runtime && s.runtime.live_processes],
    ['posted', s => s.runtime && s.runtime.counts && s.runtime.counts.posted],
    ['handled', s => s.runtime && s.runtime.counts && s.runtime.counts.handled],
    ['rejected', s => s.runtime && s.runtime.counts && s.runtime.counts.rejected, 'warn'],
    ['dead-lettered', s => s.runtime && s.runtime.counts && s.runtime.counts.dead_lettered, 'warn'],
    ['queued', s => s.runtime && s.runtime.counts && s.runtime.counts.queued],
  ];
  let totalEls = null;
  function renderHeader() {
    if (!totalEls) {
      const dl = $('#totals');
      totalEls = TOTALS.map(([label]) => {
        const dd = h('dd', null, '–');
        dl.append(h('div', { class: 'stat' }, h('dt', null, label), dd));
        return dd;
      });
    }
    TOTALS.forEach(([, get, cls], i) => {
      const v = get(state);
      totalEls[i].textContent = int(v);
      totalEls[i].classList.toggle(cls || 'none', !!cls && num(v) > 0);
    });
    updateLastUpdate();
  }
  function updateLastUpdate() {
    const e = $('#last-update');
    if (lastUpdate === null) return;
    const ago = Math.max(0, Math.round((Date.now() - lastUpdate) / 1000));
    e.textContent = 'updated ' + new Date(lastUpdate).toLocaleTimeString('en-GB', { hour12: false }) +
      (ago >= 2 ? ` (${ago} s ago)` : '');
    e.classList.toggle('stale', ago >= 5);
  }
  function renderFooter() {
    $('#footer').textContent = `API version ${str(state.version)} · sampled every ${str(state.interval_ms)} ms · console up ${uptime(state.now_ms)}`;
  }

  // ---- groups
  const groupViews = new Map();
  function makeGroupView(name) {
    const v = {};
    v.name = h('h2', { class: 'group-name' }, name);
    v.badges = h('span', { class: 'badges' });
    v.meta = h('div', { class: 'meta' });
    v.queue = createChart({ id: 'queue', title: 'queue length', series: [
      { label: 'queued', color: '#2563eb' }] });
    v.rates = createChart({ id: 'rates', title: 'messages / s', series: [
      { label: 'admitted', color: '#2563eb' },
      { label: 'rejected', color: '#dc2626' },
      { label: 'handled', color: '#16a34a', dash: true }] });
    v.latency = createChart({ id: 'latency', title: 'latency', fmt: dur, yFormat: durAxis, series: [
      { label: 'queue p50', color: '#7c3aed', dash: true },
      { label: 'queue p99', color: '#7c3aed' },
      { label: 'handling p50', color: '#ea580c', dash: true },
      { label: 'handling p99', color: '#ea580c' }] });
    v.busy = createChart({ id: 'busy', title: 'workers busy', fmt: percent, yFormat: t => t + ' %', series: [
      { label: 'busy', color: '#0891b2' }] });
    v.controllers = h('ul', { class: 'controllers' });
    v.principalsNote = h('span', { class: 'muted' });
    v.principals = h('tbody');
    v.section = h('section', { class: 'group card', 'data-group': name },
      h('div', { class: 'group-head' }, v.name, v.badges),
      v.meta,
      h('div', { class: 'charts' }, v.queue.el, v.rates.el, v.latency.el, v.busy.el),
      h('div', { class: 'group-foot' },
        h('div', null, h('h3', null, 'Controllers'), v.controllers),
        h('div', null, h('h3', null, 'Principals ', v.principalsNote),
          h('div', null, h('table', { class: 'data' },
            h('thead', null, h('tr', null, h('th', { class: 'num' }, 'id'), h('th', { class: 'num' }, 'priority'),
              h('th', { class: 'num' }, 'class'), h('th', { class: 'num' }, 'handled'),
              h('th', { class: 'num' }, 'rejected'), h('th', { class: 'num' }, 'handling time'))),
            v.principals)))));
    return v;
  }
  function metaItem(label, value, cls) {
    return h('span', { class: 'mi' + (cls ? ' ' + cls : '') }, h('span', { class: 'muted' }, label + ' '), value);
  }
  function updateGroupView(v, g) {
    const c = g.counts || {};
    const range = Array.isArray(g.thread_range) && g.thread_range.length === 2
      ? ` (${str(g.thread_range[0])}–${str(g.thread_range[1])})` : '';
    v.badges.replaceChildren(...present(
      g.admission_active ? h('span', { class: 'badge hot' }, 'admission active') : null,
      num(g.blocked_workers) > 0 ? h('span', { class: 'badge warn' }, `${int(g.blocked_workers)} blocked`) : null));
    v.meta.replaceChildren(...present(
      metaItem('scheduler', str(g.scheduler) || '–'),
      metaItem('threads', int(g.threads) + range),
      metaItem('busy', num(g.utilisation) === null ? '–' : percent(g.utilisation * 100)),
      num(g.budget) !== null ? metaItem('budget', int(g.budget)) : null,
      metaItem('queued', int(num(g.queue_length) !== null ? g.queue_length : c.queued)),
      metaItem('handled', int(c.handled)),
      metaItem('rejected', int(c.rejected), num(c.rejected) > 0 ? 'warn' : null),
      metaItem('slow turns', int(g.slow_turns), num(g.slow_turns) > 0 ? 'warn' : null),
      num(g.slow_turn_threshold_us) !== null ? metaItem('slow ≥', dur(g.slow_turn_threshold_us)) : null));
    const hs = historyOf(g);
    const t = arr(hs.t_ms);
    v.queue.update(t, [hs.queue_length]);
    v.rates.update(t, [hs.admitted_per_s, hs.rejected_per_s, hs.handled_per_s]);
    v.latency.update(t, [hs.queue_p50_us, hs.queue_p99_us, hs.handling_p50_us, hs.handling_p99_us]);
    v.busy.update(t, [arr(hs.busy).map(b => num(b) === null ? null : b * 100)]);
    const ctrls = arr(g.controllers);
    v.controllers.replaceChildren(...(ctrls.length
      ? ctrls.map(k => h('li', null, h('b', null, str(k && k.name)), ' ', h('span', null, str(k && k.detail))))
      : [h('li', { class: 'muted' }, 'none')]));
    const ps = arr(g.principals).filter(p => p && typeof p === 'object').slice()
      .sort((a, b) => (num(b.handled) || 0) - (num(a.handled) || 0) || (num(b.rejected) || 0) - (num(a.rejected) || 0));
    v.principalsNote.textContent = ps.length > 10 ? `(top 10 of ${ps.length} by handled)` : ps.length ? '' : '(none)';
    v.principals.replaceChildren(...ps.slice(0, 10).map(p => h('tr', null,
      h('td', { class: 'num' }, str(p.id)), h('td', { class: 'num' }, str(p.priority)),
      h('td', { class: 'num' }, str(p.class)), h('td', { class: 'num' }, int(p.handled)),
      h('td', { class: 'num' + (num(p.rejected) > 0 ? ' warn' : '') }, int(p.rejected)),
      h('td', { class: 'num' }, dur(p.handling_time_us)))));
  }
  function renderGroups() {
    const box = $('#groups');
    const placeholder = box.querySelector(':scope > p');
    if (placeholder) placeholder.remove();
    const seen = new Set();
    let i = 0;
    for (const g of state.groups) {
      const name = str(g.name);
      if (seen.has(name)) continue; // names are unique; be safe anyway
      seen.add(name);
      let v = groupViews.get(name);
      if (!v) { v = makeGroupView(name); groupViews.set(name, v); }
      if (box.children[i] !== v.section) box.insertBefore(v.section, box.children[i] || null);
      updateGroupView(v, g);
      i++;
    }
    for (const [name, v] of groupViews) if (!seen.has(name)) { v.section.remove(); groupViews.delete(name); }
    if (!state.groups.length) box.append(h('p', { class: 'card muted' }, 'No groups.'));
  }

  // ---- history window: the last two minutes (every sample) or the last half hour (10 s points)
  let windowMode = 'fine';
  function historyOf(o) {
    const hs = o && (windowMode === 'long' ? o.history_long : o.history);
    return hs && typeof hs === 'object' ? hs : { t_ms: [] };
  }
  function setupWindow() {
    for (const b of document.querySelectorAll('#window button[data-window]')) {
      b.addEventListener('click', () => {
        windowMode = b.dataset.window === 'long' ? 'long' : 'fine';
        for (const o of document.querySelectorAll('#window button[data-window]')) {
          o.setAttribute('aria-pressed', String(o === b));
        }
        document.body.dataset.window = windowMode;
        scheduleRender();
      });
    }
  }

  // ---- node: memory and CPU of this OS process
  let nodeView = null;
  function renderNode() {
    const n = state.node;
    const sec = $('#node');
    if (!n) { sec.hidden = true; return; }
    sec.hidden = false;
    if (!nodeView) {
      nodeView = {
        meta: h('div', { class: 'meta' }),
        rss: createChart({ id: 'rss', title: 'memory (resident)', fmt: bytes, yFormat: v => bytes(v), series: [
          { label: 'RSS', color: '#9333ea' }] }),
        cpu: createChart({ id: 'cpu', title: 'CPU (% of one core)', fmt: percent, yFormat: v => v + ' %', series: [
          { label: 'CPU', color: '#ea580c' }] }),
      };
      sec.append(nodeView.meta, h('div', { class: 'charts two' }, nodeView.rss.el, nodeView.cpu.el));
    }
    const na = n.supported ? null : ' (n/a on this OS)';
    nodeView.meta.replaceChildren(...present(
      metaItem('memory', bytes(n.rss_bytes)),
      metaItem('CPU', percent(n.cpu_percent)),
      metaItem('OS threads', n.threads === null || n.threads === undefined ? 'n/a' : int(n.threads)),
      na ? h('span', { class: 'muted' }, na) : null));
    const hs = historyOf(n);
    const t = arr(hs.t_ms);
    nodeView.rss.update(t, [hs.rss_bytes]);
    nodeView.cpu.update(t, [hs.cpu_percent]);
  }

  // ---- the process table: top N by one column, fetched from api/processes
  // Numeric columns sort on the server (the top N by that figure among all processes);
  // name, type and group sort the rows shown.
  const PROC_COLS = [
    { label: 'id', key: 'id', num: true },
    { label: 'name', local: p => arr(p.names).join(', ') },
    { label: 'type', local: p => str(p.type) },
    { label: 'group', local: p => str(p.group) },
    { label: 'queue', key: 'queue', num: true },
    { label: 'turns', key: 'turns', num: true },
    { label: 'handled', key: 'handled', num: true },
    { label: 'failures', key: 'failures', num: true },
    { label: 'last activity', key: 'activity', num: true },
    { label: 'msgs/s', key: 'rate', num: true },
  ];
  const procs = { sort: 'queue', local: null, limit: 50, group: '', rows: [], seq: 0, last: 0, busy: false, built: false };
  function shortType(t) {
    // `app::module::Type<app::Other>` → `Type<Other>`, the full path in the title
    return str(t).replace(/\b[a-z_][a-z0-9_]*::/g, '');
  }
  function buildProcessTable() {
    procs.built = true;
    const head = $('#processes thead tr');
    head.replaceChildren(...PROC_COLS.map((c, i) => {
      const b = h('button', { type: 'button', class: 'sort', 'data-col': i }, c.label);
      b.addEventListener('click', () => {
        if (c.key) { procs.sort = c.key; procs.local = null; fetchProcesses(true); }
        else { procs.local = i; drawProcesses(); }
      });
      return h('th', { class: c.num ? 'num' : null, 'data-sort-key': c.key || '' }, b);
    }));
    $('#proc-limit').addEventListener('change', e => { procs.limit = +e.target.value || 50; fetchProcesses(true); });
    $('#proc-group').addEventListener('change', e => { procs.group = e.target.value; fetchProcesses(true); });
  }
  function renderProcesses() {
    if (!procs.built) buildProcessTable();
    // the group filter follows the groups
    const sel = $('#proc-group');
    const names = state.groups.map(g => str(g.name));
    const have = Array.from(sel.options).slice(1).map(o => o.value);
    if (have.join('\n') !== names.join('\n')) {
      sel.replaceChildren(h('option', { value: '' }, 'all groups'), ...names.map(n => h('option', { value: n }, n)));
      sel.value = names.includes(procs.group) ? procs.group : '';
    }
    if (Date.now() - procs.last >= 1000) fetchProcesses(false);
    if (procPage.pid !== null && Date.now() - procPage.last >= 1000) fetchProcess();
  }
  async function fetchProcesses(now) {
    if (procs.busy && !now) return;
    procs.busy = true;
    procs.last = Date.now();
    const seq = ++procs.seq;
    const q = `api/processes?sort=${encodeURIComponent(procs.sort)}&limit=${procs.limit}` +
      (procs.group ? '&group=' + encodeURIComponent(procs.group) : '');
    let data;
    try { data = await getJSON(q); } catch (e) {
      if (seq === procs.seq) { procs.busy = false; $('#proc-note').textContent = e.message; }
      return;
    }
    if (seq !== procs.seq) return;
    procs.busy = false;
    procs.rows = arr(data && data.processes).filter(p => p && typeof p === 'object');
    drawProcesses();
  }
  function drawProcesses() {
    const table = $('#processes table');
    const col = procs.local !== null ? PROC_COLS[procs.local] : PROC_COLS.find(c => c.key === procs.sort);
    table.setAttribute('data-sort', procs.local !== null ? col.label : procs.sort);
    for (const th of table.querySelectorAll('thead th')) {
      const c = PROC_COLS[+th.firstChild.dataset.col];
      th.classList.toggle('sorted', c === col);
      th.setAttribute('aria-sort', c === col ? (c.key === 'id' || c.local ? 'ascending' : 'descending') : 'none');
    }
    let rows = procs.rows;
    if (procs.local !== null) {
      const f = PROC_COLS[procs.local].local;
      rows = rows.slice().sort((a, b) => f(a).localeCompare(f(b)));
    }
    $('#proc-note').textContent = `${rows.length} shown, top ${procs.limit} by ${col ? col.label : procs.sort}` +
      (procs.group ? ` in ${procs.group}` : '') + (procs.local !== null ? ' (sorted here)' : '');
    const trs = rows.map(p => {
      const tr = h('tr', { class: 'proc', 'data-pid': str(p.pid), 'data-queue': str(p.queue_length), tabindex: 0 },
        h('td', { class: 'num mono' }, str(p.id)),
        h('td', null, arr(p.names).join(', ')),
        h('td', { title: str(p.type) }, shortType(p.type)),
        h('td', null, str(p.group)),
        h('td', { class: 'num' + (num(p.queue_length) > 1000 ? ' hot' : '') }, int(p.queue_length)),
        h('td', { class: 'num' }, int(p.turns)),
        h('td', { class: 'num' }, int(p.handled)),
        h('td', { class: 'num' + (num(p.failures) > 0 ? ' warn' : '') }, int(p.failures)),
        h('td', { class: 'num' }, ago(p.idle_ms)),
        h('td', { class: 'num' }, si(p.messages_per_second)));
      const open = () => openProcess(p.pid);
      tr.addEventListener('click', open);
      tr.addEventListener('keydown', e => { if (e.key === 'Enter') open(); });
      return tr;
    });
    if (!trs.length) trs.push(h('tr', null, h('td', { colspan: PROC_COLS.length, class: 'muted' }, 'no processes')));
    $('#processes tbody').replaceChildren(...trs);
  }

  // ---- the process page: one process in detail, from api/process/<id>, refreshed every second
  const procPage = { pid: null, seq: 0, last: 0, charts: null, series: { t: [], rate: [], queue: [] } };
  function pidLink(id) {
    const m = /^<?(\d+)>?$/.exec(str(id));
    if (!m) return h('span', { class: 'mono' }, str(id));
    return h('button', { type: 'button', class: 'pid-link mono', onclick: () => openProcess(+m[1]) }, str(id));
  }
  function pidList(ids) {
    const xs = arr(ids);
    return xs.length ? xs.map(pidLink) : [h('span', { class: 'muted' }, 'none')];
  }
  function openProcess(pid) {
    pid = num(+pid);
    if (pid === null) return;
    const changed = procPage.pid !== pid;
    procPage.pid = pid;
    if (changed) {
      procPage.series = { t: [], rate: [], queue: [] };
      $('#process-body').replaceChildren(h('p', { class: 'muted' }, 'loading…'));
    }
    const sec = $('#process-page');
    sec.hidden = false;
    sec.setAttribute('data-pid', String(pid));
    if (location.hash !== '#process=' + pid) history.replaceState(null, '', '#process=' + pid);
    fetchProcess();
    sec.scrollIntoView({ block: 'start' });
  }
  function closeProcess() {
    procPage.pid = null;
    procPage.seq++;
    $('#process-page').hidden = true;
    history.replaceState(null, '', location.pathname + location.search);
  }
  async function fetchProcess() {
    const pid = procPage.pid;
    if (pid === null) return;
    procPage.last = Date.now();
    const seq = ++procPage.seq;
    let d, gone = false, error = null;
    try {
      const r = await fetch(api('api/process/' + pid), { cache: 'no-store' });
      if (r.status === 404) gone = true;
      else if (!r.ok) error = `api/process/${pid}: HTTP ${r.status}`;
      else d = await r.json();
    } catch (e) { error = e.message; }
    if (seq !== procPage.seq || procPage.pid !== pid) return;
    if (gone || error) {
      $('#process-title').textContent = `Process <${pid}>`;
      $('#process-page').setAttribute('data-state', gone ? 'gone' : 'error');
      $('#process-body').replaceChildren(h('p', { class: gone ? 'muted' : 'error' },
        gone ? `<${pid}> is not a live process (it terminated, or never was).` : error));
      return;
    }
    drawProcess(d);
  }
  function drawProcess(d) {
    const p = (d && d.process) || {};
    const sec = $('#process-page');
    sec.setAttribute('data-state', 'live');
    sec.setAttribute('data-queue', str(p.queue_length));
    sec.setAttribute('data-rate', str(p.messages_per_second));
    const names = arr(p.names);
    $('#process-title').textContent = `Process ${str(p.id)}` + (names.length ? ` “${names.join(', ')}”` : '');
    const s = procPage.series;
    s.t.push(Date.now() - (clockOffset || 0));
    s.rate.push(num(p.messages_per_second));
    s.queue.push(num(p.queue_length));
    for (const k of ['t', 'rate', 'queue']) if (s[k].length > 600) s[k].shift();
    if (!procPage.charts) {
      procPage.charts = {
        rate: createChart({ id: 'proc-rate', title: 'messages / s', height: 110, series: [{ label: 'taken', color: '#16a34a' }] }),
        queue: createChart({ id: 'proc-queue', title: 'queue length', height: 110, series: [{ label: 'queued', color: '#2563eb' }] }),
      };
    }
    const sup = d.supervisor;
    const facts = h('dl', { class: 'facts' },
      h('dt', null, 'type'), h('dd', { class: 'mono' }, str(p.type)),
      h('dt', null, 'group'), h('dd', null, str(p.group)),
      h('dt', null, 'queue length'), h('dd', { class: 'num', id: 'process-queue' }, int(p.queue_length)),
      h('dt', null, 'messages / s'), h('dd', { class: 'num', id: 'process-rate' }, si(p.messages_per_second)),
      h('dt', null, 'turns'), h('dd', { class: 'num' }, int(p.turns)),
      h('dt', null, 'handled'), h('dd', { class: 'num' }, int(p.handled)),
      h('dt', null, 'failures'), h('dd', { class: 'num' }, int(p.failures)),
      h('dt', null, 'last activity'), h('dd', null, ago(p.idle_ms)));
    const rel = h('dl', { class: 'facts' },
      h('dt', null, 'supervisor'), h('dd', { id: 'process-supervisor' }, sup && typeof sup === 'object'
        ? [pidLink(sup.id), ` child “${str(sup.child)}”, ${int(sup.restarts)} restarts, ${int(sup.failures)} failures`]
        : h('span', { class: 'muted' }, 'none')),
      h('dt', null, 'monitors'), h('dd', { id: 'process-monitors' }, pidList(d.monitors)),
      h('dt', null, 'monitored by'), h('dd', { id: 'process-monitored-by' }, pidList(d.monitored_by),
        num(d.other_watchers) > 0 ? h('span', { class: 'muted' }, ` + ${int(d.other_watchers)} watch callbacks`) : null),
      h('dt', null, 'links'), h('dd', { id: 'process-links' }, pidList(d.links)));
    const failures = arr(d.recent_failures).filter(f => f && typeof f === 'object');
    const ftable = h('table', { class: 'data', id: 'process-failures' },
      h('thead', null, h('tr', null, h('th', null, 'time'), h('th', null, 'process'), h('th', null, 'reason'))),
      h('tbody', null, failures.length ? failures.slice().reverse().map(f => h('tr', null,
        h('td', { class: 'time' }, clock(f.t_ms)), h('td', null, pidLink(f.process)), h('td', null, str(f.reason))))
        : h('tr', null, h('td', { colspan: 3, class: 'muted' }, 'no failures recorded'))));
    $('#process-body').replaceChildren(
      h('div', { class: 'process-grid' }, facts, rel,
        h('div', { class: 'charts two' }, procPage.charts.rate.el, procPage.charts.queue.el)),
      h('h3', null, 'Recent failures ', h('span', { class: 'muted' }, '(this process and its earlier incarnations)')),
      h('div', { class: 'scroll' }, ftable));
    procPage.charts.rate.update(s.t, [s.rate]);
    procPage.charts.queue.update(s.t, [s.queue]);
  }
  function setupProcessPage() {
    $('#process-close').addEventListener('click', closeProcess);
    const m = /^#process=(\d+)$/.exec(location.hash);
    if (m) openProcess(+m[1]);
  }

  // ---- controller decisions
  let renderedLog = -1;
  function renderLog() {
    if (renderedLog === logVersion) return;
    renderedLog = logVersion;
    const log = state.controller_log;
    $('#controller-log-count').textContent = log.length ? `(last ${log.length})` : '';
    const rows = [];
    for (let i = log.length - 1; i >= 0; i--) {
      const e = log[i] || {};
      rows.push(h('tr', null, h('td', { class: 'time' }, clock(e.t_ms)), h('td', null, str(e.group)),
        h('td', null, str(e.controller)), h('td', null, str(e.detail))));
    }
    if (!rows.length) rows.push(h('tr', null, h('td', { colspan: 4, class: 'muted' }, 'no decisions yet')));
    $('#controller-log tbody').replaceChildren(...rows);
  }

  // ---- supervision
  function treeNode(n, depth) {
    if (!n || typeof n !== 'object') return null;
    const restarts = num(n.restarts) || 0;
    const kids = arr(n.children);
    return h('li', null,
      h('span', { class: 'node' },
        h('span', { class: 'node-id' }, str(n.id)),
        n.kind ? h('span', { class: 'kind' }, str(n.kind)) : null,
        n.pid === null || n.pid === undefined
          ? h('span', { class: 'pid stopped' }, 'stopped')
          : h('span', { class: 'pid' }, str(n.pid)),
        h('span', { class: restarts > 0 ? 'restarts hot' : 'restarts' },
          restarts === 1 ? '1 restart' : `${int(restarts)} restarts`)),
      kids.length && depth < 64 ? h('ul', null, kids.map(c => treeNode(c, depth + 1))) : null);
  }
  function renderSupervisors() {
    const sups = arr(state.supervisors);
    const box = $('#supervision .tree');
    if (!sups.length) { box.replaceChildren(h('p', { class: 'muted' }, 'no supervisors')); return; }
    box.replaceChildren(h('ul', { class: 'tree-root' }, sups.map(s =>
      s && s.tree ? treeNode(s.tree, 0) : h('li', null, str(s && s.name)))));
  }

  // ---- dead letters, slow turns
  function renderRecent(sel, obj, cols, ncols) {
    obj = obj || {};
    const recent = arr(obj.recent);
    const total = num(obj.total);
    const t = $(sel + ' h2 .total');
    t.textContent = total === null ? '' : int(total);
    t.classList.toggle('hot', total > 0);
    const rows = recent.slice().reverse().map(e => h('tr', null, cols(e || {})));
    if (!rows.length) rows.push(h('tr', null, h('td', { colspan: ncols, class: 'muted' }, 'none')));
    $(sel + ' tbody').replaceChildren(...rows);
  }
  function renderDeadLetters() {
    renderRecent('#dead-letters', state.dead_letters, e => [
      h('td', { class: 'time' }, clock(e.t_ms)), h('td', null, str(e.to)),
      h('td', { class: 'mono' }, str(e.type)), h('td', null, str(e.reason))], 4);
  }
  function renderSlowTurns() {
    renderRecent('#slow-turns', state.slow_turns, e => [
      h('td', { class: 'time' }, clock(e.t_ms)), h('td', null, str(e.group)), h('td', null, str(e.process)),
      h('td', { class: 'mono' }, str(e.message_type)), h('td', { class: 'num' }, dur(e.held_us))], 5);
  }

  // ---------------------------------------------------------------- benchmarks
  const bench = { started: false, runs: [], charts: [], seq: 0 };
  function renderBenchPanel() {
    const on = arr(state.panels).includes('bench');
    const sec = $('#bench');
    const wasHidden = sec.hidden;
    sec.hidden = !on;
    if (on && !bench.started) { bench.started = true; setupBench(); loadBenchRuns(); }
    if (on && wasHidden) bench.charts.forEach(c => c.redraw());
  }
  function runLabel(r) {
    return `#${str(r.id)} ${str(r.commit)} ${str(r.date).replace('T', ' ').replace(/:\d\dZ$/, 'Z')}`;
  }
  function setupBench() {
    $('#bench-reload').addEventListener('click', loadBenchRuns);
    $('#bench-form').addEventListener('submit', ev => { ev.preventDefault(); compare(); });
    $('#bench-a').addEventListener('change', compare);
    $('#bench-b').addEventListener('change', compare);
    $('#bench-threshold').addEventListener('change', compare);
  }
  async function loadBenchRuns() {
    const info = $('#bench-info');
    let data;
    try { data = await getJSON('api/bench/runs'); } catch (e) { info.textContent = e.message; return; }
    const runs = arr(data && data.runs).filter(r => r && typeof r === 'object');
    bench.runs = runs;
    info.textContent = runs.length ? `(${runs.length} runs, ${runLabel(runs[0])} … ${runLabel(runs[runs.length - 1])})` : '(no runs recorded)';
    // one small chart per figure, x = run index
    const figs = new Map();
    runs.forEach((r, i) => {
      for (const f of arr(r.figures)) {
        if (!f || typeof f !== 'object') continue;
        const name = str(f.name);
        if (!figs.has(name)) figs.set(name, { name, unit: str(f.unit), hib: !!f.higher_is_better, ys: new Array(runs.length).fill(null) });
        figs.get(name).ys[i] = num(f.value);
      }
    });
    const box = $('#bench-figures');
    box.replaceChildren();
    bench.charts = [];
    const xs = runs.map((_, i) => i);
    const xTicks = (x0, x1) => {
      const out = [], n = x1 - x0 + 1, step = Math.max(1, Math.ceil(n / 5));
      for (let i = x1; i >= x0; i -= step) out.push({ x: i, label: '#' + str(runs[i] && runs[i].id) });
      return out;
    };
    for (const f of figs.values()) {
      const c = createChart({ id: 'bench', height: 110, dots: true, xTicks,
        title: `${f.name} (${f.unit}${f.unit ? ', ' : ''}${f.hib ? 'higher' : 'lower'} is better)`,
        series: [{ label: 'value', color: '#2563eb' }] });
      c.svg.setAttribute('data-figure', f.name);
      box.append(c.el);
      c.update(xs, [f.ys]);
      bench.charts.push(c);
    }
    if (!figs.size) box.append(h('p', { class: 'muted' }, 'no figures'));
    // run pickers: keep the user's choice when it still exists
    const a = $('#bench-a'), b = $('#bench-b');
    const keepA = a.value, keepB = b.value;
    const opts = () => runs.map(r => h('option', { value: str(r.id) }, runLabel(r)));
    a.replaceChildren(...opts());
    b.replaceChildren(...opts());
    const ids = runs.map(r => str(r.id));
    a.value = ids.includes(keepA) ? keepA : (ids[ids.length - 2] || ids[0] || '');
    b.value = ids.includes(keepB) ? keepB : (ids[ids.length - 1] || '');
    if (runs.length >= 2) compare();
    else $('#bench-compare').replaceChildren(h('p', { class: 'muted' }, 'Comparing needs at least two recorded runs.'));
  }
  async function compare() {
    const a = $('#bench-a').value, b = $('#bench-b').value;
    let th = parseFloat($('#bench-threshold').value);
    if (!(th >= 0)) th = 5;
    const out = $('#bench-compare');
    if (!a || !b) return;
    const seq = ++bench.seq;
    let res;
    try {
      res = await getJSON(`api/bench/compare?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}&threshold=${encodeURIComponent(th)}`);
    } catch (e) {
      if (seq === bench.seq) out.replaceChildren(h('p', { class: 'error' }, e.message));
      return;
    }
    if (seq !== bench.seq) return; // a newer request was made
    const rows = arr(res && res.rows).filter(r => r && typeof r === 'object');
    const regs = num(res.regressions) !== null ? res.regressions : rows.filter(r => r.regression).length;
    const ra = res.a || {}, rb = res.b || {};
    const headline = h('p', { class: 'regressions ' + (regs > 0 ? 'bad' : 'good'), id: 'bench-regressions' },
      `${int(regs)} regression${regs === 1 ? '' : 's'}`);
    const sub = h('p', { class: 'muted' },
      `A ${runLabel(ra)} → B ${runLabel(rb)}, threshold ${str(num(res.threshold_pct) !== null ? res.threshold_pct : th)} %`);
    const table = h('table', { class: 'data' },
      h('thead', null, h('tr', null, h('th', null, 'figure'), h('th', null, 'unit'),
        h('th', { class: 'num' }, 'A'), h('th', { class: 'num' }, 'B'), h('th', { class: 'num' }, 'change'),
        h('th', null, 'better'), h('th', null, ''))),
      h('tbody', null, rows.map(r => h('tr', { class: r.regression ? 'regression' : null },
        h('td', null, str(r.name)), h('td', null, str(r.unit)),
        h('td', { class: 'num' }, si(r.a)), h('td', { class: 'num' }, si(r.b)),
        h('td', { class: 'num' }, pct(r.change_pct)),
        h('td', null, r.higher_is_better ? 'higher' : 'lower'),
        h('td', null, r.regression ? 'REGRESSION' : '')))));
    out.replaceChildren(headline, sub, h('div', { class: 'compare' }, h('div', { class: 'scroll' }, table), barPlot(rows)));
  }
  function pct(v) {
    v = num(v);
    return v === null ? '–' : (v > 0 ? '+' : '') + sig(v) + ' %';
  }
  // horizontal bars of change_pct around a zero line; red = regression, green = better
  function barPlot(rows) {
    const rowH = 20, labW = 160, valW = 60, W = 520, H = Math.max(1, rows.length) * rowH + 8;
    const svg = sv('svg', { class: 'bars', viewBox: `0 0 ${W} ${H}`, 'data-chart': 'bench-compare',
      'data-points': rows.length, 'data-last-t': '', role: 'img', 'aria-label': 'change in percent' });
    svg.style.maxWidth = W + 'px';
    let max = 0;
    for (const r of rows) max = Math.max(max, Math.abs(num(r.change_pct) || 0));
    if (!(max > 0)) max = 1;
    const mid = labW + (W - labW - valW) / 2, half = (W - labW - valW) / 2 - 4;
    svg.append(sv('line', { x1: mid, x2: mid, y1: 2, y2: H - 4, class: 'axis' }));
    rows.forEach((r, i) => {
      const c = num(r.change_pct) || 0, y = 4 + i * rowH;
      const better = r.higher_is_better ? c > 0 : c < 0;
      const w = Math.abs(c) / max * half;
      const name = sv('text', { x: labW - 6, y: y + 13, 'text-anchor': 'end', class: 'tick' });
      name.textContent = str(r.name).length > 26 ? str(r.name).slice(0, 25) + '…' : str(r.name);
      const tip = sv('title', {});
      tip.textContent = str(r.name);
      name.append(tip);
      const bar = sv('rect', { x: (c < 0 ? mid - w : mid).toFixed(1), y: y + 3, width: Math.max(1, w).toFixed(1), height: rowH - 6,
        class: r.regression ? 'bar bad' : better && c !== 0 ? 'bar good' : 'bar' });
      const val = sv('text', { x: W - 4, y: y + 13, 'text-anchor': 'end', class: 'tick' + (r.regression ? ' bad' : '') });
      val.textContent = pct(c);
      svg.append(name, bar, val);
    });
    return svg;
  }

  // ---------------------------------------------------------------- wiring
  let resizeTimer = null;
  window.addEventListener('resize', () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => {
      for (const v of groupViews.values()) { v.queue.redraw(); v.rates.redraw(); v.latency.redraw(); v.busy.redraw(); }
      if (nodeView) { nodeView.rss.redraw(); nodeView.cpu.redraw(); }
      if (procPage.charts) { procPage.charts.rate.redraw(); procPage.charts.queue.redraw(); }
      bench.charts.forEach(c => c.redraw());
    }, 150);
  });
  setInterval(updateLastUpdate, 1000);
  function boot() {
    setupWindow();
    setupProcessPage();
    start();
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', boot);
  else boot();
})();
