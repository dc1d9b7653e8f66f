(function () {
  'use strict';
  const svgs = Array.from(document.querySelectorAll('svg.timeline'));
  const svg = svgs[0];
  const params = {};
  for (const part of location.hash.replace(/^#/, '').split('&')) {
    const i = part.indexOf('=');
    if (part) params[i < 0 ? part : part.slice(0, i)] = i < 0 ? '' : decodeURIComponent(part.slice(i + 1));
  }
  const SELFTEST = 'selftest' in params;
  const NS = 'http://www.w3.org/2000/svg';
  const X0 = +svg.dataset.x0, X1 = +svg.dataset.x1;
  const END = Math.max.apply(null, svgs.map(s => +s.dataset.end));
  const FIRST = [+svg.dataset.w0, +svg.dataset.w1];
  let w0 = FIRST[0], w1 = FIRST[1];
  const charts = svgs.map(s => ({
    svg: s, top: +s.dataset.top, bottom: +s.dataset.bottom,
    timed: Array.from(s.querySelectorAll('[data-t0],[data-ts]')), cursor: null,
  }));
  const x = t => X0 + (t - w0) / Math.max(1, w1 - w0) * (X1 - X0);
  function fmt(t, step) {
    const d = step >= 1e9 ? 0 : step >= 1e8 ? 1 : step >= 1e7 ? 2 : step >= 1e6 ? 3 : 6;
    return (t / 1e9).toFixed(d) + 's';
  }
  function ticks(c) {
    const g = c.svg.querySelector('#ticks');
    while (g.firstChild) g.removeChild(g.firstChild);
    const span = w1 - w0, raw = Math.max(1, span / 10);
    let step = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const m of [1, 2, 5, 10]) { if (step * m >= raw) { step *= m; break; } }
    for (let t = Math.ceil(w0 / step) * step; t <= w1; t += step) {
      const l = document.createElementNS(NS, 'line');
      l.setAttribute('class', 'grid');
      l.setAttribute('x1', x(t)); l.setAttribute('x2', x(t));
      l.setAttribute('y1', c.top - 8); l.setAttribute('y2', c.bottom);
      const tx = document.createElementNS(NS, 'text');
      tx.setAttribute('class', 'tick'); tx.setAttribute('x', x(t)); tx.setAttribute('y', c.top - 12);
      tx.textContent = fmt(t, step);
      g.appendChild(l); g.appendChild(tx);
    }
  }
  // The address: the cursor's step and run when the reader has moved it, and the window.
  // Steps count from 1 (`s=N`); `step=N`, the 0-based index of pages before set-up steps
  // were folded, still opens the event it named (see `fromLegacy`).
  let cursorMoved = 's' in params || 'step' in params;
  function address() {
    if (!history.replaceState) return;
    const parts = [];
    if (cursorMoved && runs.length) {
      parts.push('s=' + (cur + 1));
      if (active > 0) parts.push('variant=' + encodeURIComponent(runs[active].name));
    }
    parts.push('w=' + (w0 / 1e9).toFixed(6) + ',' + (w1 / 1e9).toFixed(6));
    try { history.replaceState(null, '', '#' + parts.join('&')); } catch (e) { /* file:// may refuse */ }
  }
  function layout() {
    for (const c of charts) {
      for (const el of c.timed) {
        const d = el.dataset;
        if (d.ts !== undefined) {
          const ts = d.ts.split(' '), ys = d.ys.split(' ');
          el.setAttribute('points', ts.map((t, i) => x(+t).toFixed(1) + ',' + ys[i]).join(' '));
          continue;
        }
        const a = x(+d.t0);
        const tag = el.tagName;
        if (tag === 'line') {
          el.setAttribute('x1', a.toFixed(1));
          el.setAttribute('x2', (d.t1 !== undefined ? x(+d.t1) : a).toFixed(1));
        } else if (tag === 'rect') {
          if (d.w !== undefined) { el.setAttribute('x', (a - d.w / 2).toFixed(1)); }
          else {
            el.setAttribute('x', a.toFixed(1));
            el.setAttribute('width', Math.max(1, x(+d.t1) - a).toFixed(1));
          }
        } else if (tag === 'text') {
          el.setAttribute('x', (a + (+d.dx || 0)).toFixed(1));
          if (d.minw !== undefined) {
            const w = x(+d.t1) - a;
            if (w >= +d.minw) el.removeAttribute('display'); else el.setAttribute('display', 'none');
          }
        }
      }
      ticks(c);
      if (c.cursor && c.cursor.dataset.t0 !== undefined) {
        const cx = x(+c.cursor.dataset.t0).toFixed(1);
        c.cursor.setAttribute('x1', cx); c.cursor.setAttribute('x2', cx);
      }
    }
    document.getElementById('range').textContent =
      'showing ' + (w0 / 1e9).toFixed(6) + 's … ' + (w1 / 1e9).toFixed(6) + 's of ' + (END / 1e9).toFixed(3) + 's';
    address();
  }
  function setWindow(a, b) {
    const minSpan = 1e5;
    if (b - a < minSpan) { const m = (a + b) / 2; a = m - minSpan / 2; b = m + minSpan / 2; }
    const pad = (END || 1) * 0.05;
    w0 = Math.max(-pad, a); w1 = Math.min(END + pad, b);
    layout();
  }
  function zoom(f, at) {
    const t = at === undefined ? (w0 + w1) / 2 : at;
    setWindow(t - (t - w0) * f, t + (w1 - t) * f);
  }
  const tAt = px => w0 + (px - X0) / (X1 - X0) * (w1 - w0);
  const tip = document.getElementById('tip');
  let drag = null;
  window.addEventListener('mouseup', () => { drag = null; });
  for (const c of charts) {
    const s = c.svg;
    const svgX = ev => { const r = s.getBoundingClientRect(); return (ev.clientX - r.left) * (s.viewBox.baseVal.width / r.width); };
    s.addEventListener('wheel', ev => { ev.preventDefault(); zoom(ev.deltaY < 0 ? 0.8 : 1.25, tAt(svgX(ev))); }, { passive: false });
    s.addEventListener('mousedown', ev => { drag = { px: svgX(ev), w0, w1 }; });
    s.addEventListener('mousemove', ev => {
      if (drag) {
        const dt = (svgX(ev) - drag.px) / (X1 - X0) * (drag.w1 - drag.w0);
        w0 = drag.w0 - dt; w1 = drag.w1 - dt; layout();
      }
    });
    // Tooltips: the SVG's <title>s become the page's own tip (one, styled, instant).
    for (const t of Array.from(s.querySelectorAll('title'))) {
      t.parentNode.setAttribute('data-tip', t.textContent);
      t.parentNode.removeChild(t);
    }
    s.addEventListener('mouseover', ev => {
      const el = ev.target.closest('[data-tip]');
      if (!el) { tip.hidden = true; return; }
      tip.textContent = el.getAttribute('data-tip');
      tip.hidden = false;
    });
    s.addEventListener('mousemove', ev => {
      tip.style.left = Math.min(ev.clientX + 14, window.innerWidth - 580) + 'px';
      tip.style.top = (ev.clientY + 14) + 'px';
    });
    s.addEventListener('mouseleave', () => { tip.hidden = true; });
    // The cursor: one line across the lanes at the stepper's instant.
    const line = document.createElementNS(NS, 'line');
    line.setAttribute('class', 'cursor');
    line.setAttribute('y1', c.top - 6); line.setAttribute('y2', c.bottom);
    line.setAttribute('display', 'none');
    s.querySelector('#plot').appendChild(line);
    c.cursor = line;
  }
  document.getElementById('fit').onclick = () => setWindow(0, END);
  document.getElementById('focus').onclick = () => setWindow(FIRST[0], FIRST[1]);
  document.getElementById('zin').onclick = () => zoom(0.5);
  document.getElementById('zout').onclick = () => zoom(2);
  for (const a of document.querySelectorAll('[data-goto]')) {
    a.addEventListener('click', ev => {
      ev.preventDefault();
      const t = +a.dataset.goto, span = Math.max(2e9, (w1 - w0) / 2);
      setWindow(t - span * 0.7, t + span * 0.3);
    });
  }
  // Message arrows: off from the start on a busy run (the SVG says so), a click away.
  const msgsBox = document.getElementById('msgs-toggle');
  msgsBox.checked = !svg.classList.contains('nomsgs');
  const showMsgs = on => { msgsBox.checked = on; for (const s of svgs) s.classList.toggle('nomsgs', !on); };
  msgsBox.addEventListener('change', () => showMsgs(msgsBox.checked));

  // ---- The stepper: the state each run's history gave, step by step. ----
  const runs = Array.from(document.querySelectorAll('script.steps')).map(el => {
    const data = JSON.parse(el.textContent);
    return { name: el.dataset.variant, verdict: el.dataset.verdict, ok: el.dataset.ok === 'true', words: el.dataset.words || '', data, steps: data.steps };
  });
  let active = 0, cur = 0, timer = null;
  // The part of the plot's width the window shows without scrolling (1 on a wide screen).
  const visible = () => {
    const box = (charts[active] && charts[active].svg.parentNode) || document.getElementById('chart');
    const room = box.clientWidth - X0 - 10;
    return room > 50 && room < X1 - X0 ? room / (X1 - X0) : 1;
  };
  let VIS = visible();
  // The panel sits under the stepper, whatever the sentence's height.
  const bar = document.getElementById('stepper');
  // The panel beside the chart (sticky) ends at the screen's bottom edge wherever it starts.
  const fitBar = () => {
    document.documentElement.style.setProperty('--bar', bar.offsetHeight + 'px');
    const panel = document.getElementById('state');
    if (getComputedStyle(panel).position !== 'sticky') { panel.style.maxHeight = ''; return; }
    const top = Math.max(bar.offsetHeight, panel.getBoundingClientRect().top);
    panel.style.maxHeight = Math.max(120, window.innerHeight - top - 8) + 'px';
  };
  window.addEventListener('scroll', fitBar, { passive: true });
  const sentence = document.getElementById('sentence');
  const statePanel = document.getElementById('state');
  const scrub = document.getElementById('scrub');
  const stepno = document.getElementById('stepno');
  const verdict = document.getElementById('verdict');
  const vwords = document.getElementById('vwords');
  const esc = s => String(s).replace(/[&<>"]/g, c => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);
  const secs = ns => (ns / 1e9).toFixed(3) + ' s';
  const wall = ms => (ms < 0 ? '−' : '+') + (Math.abs(ms) / 1000).toFixed(3) + ' s';
  const dur = ns => { const a = Math.abs(ns); return a < 1e6 ? Math.round(a / 1e3) + ' µs' : a < 1e9 ? (a / 1e6).toFixed(1) + ' ms' : (a / 1e9).toFixed(3) + ' s'; };
  function apply(s, d) {
    if (!d) return;
    for (const part of ['n', 'c', 'w']) { if (d[part]) for (const k in d[part]) s[part][k] = d[part][k]; }
    if (d.r) s.r = d.r;
  }
  // The state after step n of run r: the nearest snapshot before it, then the deltas.
  function stateAt(r, n) {
    const D = r.data, j = Math.floor(n / D.every);
    const s = JSON.parse(JSON.stringify(D.frames[j]));
    for (let i = j * D.every + 1; i <= n; i++) apply(s, r.steps[i].d);
    return s;
  }
  // The last step of run r at or before true time t (runs share the time axis, not steps).
  function stepAtTime(r, t) {
    let lo = 0, hi = r.steps.length - 1;
    if (hi < 0 || r.steps[0].t > t) return 0;
    while (lo < hi) { const m = (lo + hi + 1) >> 1; if (r.steps[m].t <= t) lo = m; else hi = m - 1; }
    return lo;
  }
  function renderState(r, n) {
    const st = stateAt(r, n), step = r.steps[n], t = step.t, names = r.data.names;
    const clock = p => t / 1e6 + (st.w[p] || 0);
    const off = p => { const o = st.w[p] || 0; return o === 0 ? '' : ' <span class="when">(' + (o > 0 ? '+' : '−') + dur(Math.abs(o) * 1e6) + ' off true time)</span>'; };
    // A world without Redis nodes (a consensus model, a recorded log) has no nodes' table.
    const nodes = Object.keys(st.n).length > 0;
    let h = nodes ? '<div><h4>Redis nodes at ' + secs(t) + ' (true time)</h4><table><tr><th>node</th><th>role</th><th>its clock reads</th><th>keys (value, expiry on this node\'s clock)</th></tr>' : '';
    for (const p in st.n) {
      const nd = st.n[p], now = clock(+p);
      const keys = Object.keys(nd.keys).map(k => {
        const [v, e] = nd.keys[k];
        const left = e === null ? 'no expiry' : 'expires at ' + wall(e) + ' <span class="when">(' + (e > now ? 'in ' + dur((e - now) * 1e6) : 'due') + ')</span>';
        return '<b>' + esc(k) + '</b> = ' + esc(v) + ', ' + left;
      });
      h += '<tr><td>' + esc(names[p]) + '</td><td>' + esc(nd.role) + (nd.down ? ' <span class="gone">DOWN</span>' : '') + '</td><td>' + wall(Math.floor(now)) + off(+p) + '</td><td>' + (keys.length ? keys.join('<br>') : '<span class="when">no lock key</span>') + '</td></tr>';
    }
    h += (nodes ? '</table></div>' : '') + '<div><h4>Clients: what each believes</h4><table><tr><th>client</th><th>doing</th><th>what it believes</th><th>its clock reads</th></tr>';
    for (const p in st.c) {
      const c = st.c[p], now = clock(+p);
      const doing = c.down ? 'down' : c.paused ? 'PAUSED' : c.holds.length ? 'in its critical section' : c.trying ? 'trying to lock' : 'idle';
      const beliefs = c.holds.map(hd => {
        let b = 'holds lock ' + esc(hd.lock) + ' with token ' + esc(hd.token) + (hd.fence !== null ? ' (fencing token ' + hd.fence + ')' : '');
        if (hd.until_own !== null) {
          b += ', until ' + wall(hd.until_own) + ' on ' + esc(names[p]) + '\'s clock';
          if (hd.until !== null && hd.until <= t) b += ' — <span class="gone">its believed validity ran out ' + dur(t - hd.until) + ' ago</span>';
        } else b += ', with no end it checks';
        const present = Object.values(st.n).some(nd => Object.values(nd.keys).some(kv => kv[0] === hd.token));
        if (Object.keys(st.n).length && !present) b += ' — <span class="gone">its key is gone</span>';
        return b;
      });
      h += '<tr><td>' + esc(names[p]) + '</td><td>' + doing + '</td><td>' + (beliefs.length ? beliefs.join('<br>') : '<span class="when">holds nothing</span>') + '</td><td>' + wall(Math.floor(now)) + off(+p) + '</td></tr>';
    }
    h += '</table></div>';
    if (st.r) {
      h += '<div><h4>Resource</h4><table><tr><th>version</th><td>' + (st.r.version === null ? '— (not logged)' : st.r.version) + '</td></tr><tr><th>highest token seen</th><td>' + (st.r.highest === null ? '—' : st.r.highest) + '</td></tr><tr><th>last</th><td>' + esc(st.r.last || '—') + '</td></tr></table></div>';
    }
    statePanel.innerHTML = h;
    statePanel.dataset.step = String(n);
    statePanel.dataset.variant = r.name;
  }
  // The step an address names: `s=N` counts from 1; `step=N` is the 0-based index pages
  // had before set-up steps were folded into one, mapped to the step that holds that event.
  function stepFrom(p) {
    const r = runs[active], last = r.steps.length - 1;
    if ('s' in p) return Math.max(0, Math.min(last, (parseInt(p.s, 10) || 1) - 1));
    const n = parseInt(p.step, 10) || 0, fold = r.data.fold;
    return Math.max(0, Math.min(last, fold > 0 ? (n < fold ? 0 : n - fold + 1) : n));
  }
  function show(pan) {
    if (!runs.length) return;
    const r = runs[active], step = r.steps[cur];
    if (!step) return;
    const t = step.t;
    sentence.textContent = step.s;
    sentence.className = step.k || '';
    scrub.max = String(r.steps.length);
    scrub.value = String(cur + 1);
    stepno.textContent = 'step ' + (cur + 1) + ' of ' + r.steps.length + ' · ' + secs(t) + (step.k ? ' · ' + step.k : '') + (r.data.cut !== null ? ' (steps cut at ' + secs(r.data.cut) + ')' : '');
    verdict.textContent = r.name + ': ' + r.verdict;
    verdict.className = r.ok ? 'ok' : 'bad';
    vwords.textContent = r.words;
    // The active run's chart alone, the panel beside it (under it on a narrow screen).
    charts.forEach((c, i) => { const el = c.svg.closest('.run'); if (el) el.classList.toggle('active', i === active); });
    document.getElementById('charts').classList.add('one');
    VIS = visible();
    fitBar();
    renderState(r, cur);
    for (const c of charts) { c.cursor.setAttribute('data-t0', String(t)); c.cursor.removeAttribute('display'); }
    // Keep the cursor in what the reader sees (a narrow window shows only the left part).
    if (pan && (t < w0 || t > w0 + (w1 - w0) * VIS)) { const span = w1 - w0; w0 = Math.max(0, t - span * VIS * 0.6); w1 = w0 + span; }
    layout();
  }
  function go(n) {
    const r = runs[active];
    cur = Math.max(0, Math.min(r.steps.length - 1, n));
    cursorMoved = true;
    show(true);
  }
  function notable(dir) {
    const r = runs[active];
    for (let i = cur + dir; i >= 0 && i < r.steps.length; i += dir) { if (r.steps[i].k) { go(i); return; } }
  }
  function play() {
    if (timer) { clearInterval(timer); timer = null; document.getElementById('play').textContent = '▶ play'; return; }
    document.getElementById('play').textContent = '❚❚ pause';
    timer = setInterval(() => {
      if (cur >= runs[active].steps.length - 1) { play(); return; }
      go(cur + 1);
    }, 1000 / +document.getElementById('pace').value);
  }
  function setVariant(name) {
    const i = runs.findIndex(r => r.name === name);
    if (i < 0 || i === active) return;
    const t = runs[active].steps[cur] ? runs[active].steps[cur].t : 0;
    active = i;
    cur = stepAtTime(runs[i], t);
    for (const el of document.querySelectorAll('input[name=variant]')) el.checked = el.value === name;
    show(false);
  }
  document.getElementById('next').onclick = () => go(cur + 1);
  document.getElementById('prev').onclick = () => go(cur - 1);
  document.getElementById('next-notable').onclick = () => notable(1);
  document.getElementById('prev-notable').onclick = () => notable(-1);
  document.getElementById('first-step').onclick = () => go(0);
  document.getElementById('play').onclick = play;
  scrub.addEventListener('input', () => go(+scrub.value - 1));
  // A lesson's links (`#s=N`) move the cursor without reloading the page.
  window.addEventListener('hashchange', () => {
    const p = {};
    for (const part of location.hash.replace(/^#/, '').split('&')) {
      const i = part.indexOf('=');
      if (part) p[i < 0 ? part : part.slice(0, i)] = i < 0 ? '' : decodeURIComponent(part.slice(i + 1));
    }
    if (!('s' in p) && !('step' in p)) return;
    if (p.variant !== undefined && p.variant !== runs[active].name) setVariant(p.variant);
    else if (p.variant === undefined && active !== 0) setVariant(runs[0].name);
    go(stepFrom(p));
  });
  window.addEventListener('resize', () => { VIS = visible(); fitBar(); });
  for (const el of document.querySelectorAll('input[name=variant]')) el.addEventListener('change', () => { if (el.checked) { cursorMoved = true; setVariant(el.value); } });
  document.addEventListener('keydown', ev => {
    if (ev.target && (ev.target.tagName === 'SELECT' || (ev.target.tagName === 'INPUT' && ev.target.type !== 'range' && ev.target.type !== 'radio' && ev.target.type !== 'checkbox'))) return;
    let used = true;
    if (ev.key === 'ArrowRight') ev.shiftKey ? notable(1) : go(cur + 1);
    else if (ev.key === 'ArrowLeft') ev.shiftKey ? notable(-1) : go(cur - 1);
    else if (ev.key === 'PageDown') notable(1);
    else if (ev.key === 'PageUp') notable(-1);
    else if (ev.key === 'Home') go(0);
    else if (ev.key === 'End') go(runs[active].steps.length - 1);
    else if (ev.key === ' ') play();
    else if (ev.key === 'm') showMsgs(!msgsBox.checked);
    else used = false;
    if (used) ev.preventDefault();
  });

  const m = /^(-?[0-9.]+),(-?[0-9.]+)$/.exec(params.w || '');
  if (m && +m[2] > +m[1]) { w0 = +m[1] * 1e9; w1 = +m[2] * 1e9; }
  else if (VIS < 1) {
    // A narrow window shows only the left of the picture: widen the time window so that
    // the part around the violation lands in what is visible, beside the lane names.
    w1 = w0 + (w1 - w0) / VIS;
  }
  if (runs.length) {
    if (params.variant) {
      const i = runs.findIndex(r => r.name === params.variant);
      if (i >= 0) { active = i; for (const el of document.querySelectorAll('input[name=variant]')) el.checked = el.value === params.variant; }
    }
    // A page about one run (serve's what-if: the run with the added faults) opens on it, at
    // its first violation.
    const open = document.getElementById('stage').dataset.open;
    const opens = !params.variant && open !== undefined && runs[+open] !== undefined;
    if (opens) {
      active = +open;
      for (const el of document.querySelectorAll('input[name=variant]')) el.checked = el.value === runs[active].name;
    }
    // Without a step in the address: the folded set-up (the story starts after it), else
    // the first event of the window the page opens on.
    const r = runs[active];
    const bad = opens ? r.steps.findIndex(x => x.k === 'violation') : -1;
    cur = ('s' in params || 'step' in params)
      ? stepFrom(params)
      : bad >= 0 ? bad
      : r.data.fold > 0 ? 0 : Math.min(r.steps.length - 1, stepAtTime(r, w0) + (r.steps[0] && r.steps[0].t < w0 ? 1 : 0));
    // The chart opens around the cursor, unless the address gives a window.
    show(!m);
  } else {
    layout();
  }
  document.body.dataset.rendered = String(charts.reduce((n, c) => n + c.timed.length, 0));
  // `#selftest`: the page drives itself as a reader would (wheel, hover, "whole run") and
  // writes what happened into the body, for the headless browser test.
  if (SELFTEST) {
    const out = [];
    const before = w1 - w0, r = svg.getBoundingClientRect();
    svg.dispatchEvent(new WheelEvent('wheel', { deltaY: -100, clientX: r.left + r.width * 0.6, clientY: r.top + 80, bubbles: true, cancelable: true }));
    out.push((w1 - w0) < before ? 'zoom:ok' : 'zoom:FAIL');
    const bar = svg.querySelector('rect.hold[data-tip]');
    if (bar) {
      bar.dispatchEvent(new MouseEvent('mouseover', { bubbles: true }));
      out.push(!tip.hidden && tip.textContent.indexOf('holds lock') >= 0 ? 'tip:ok' : 'tip:FAIL');
    } else {
      out.push('tip:none');
    }
    document.getElementById('fit').click();
    out.push(w0 <= 0 && w1 >= END ? 'fit:ok' : 'fit:FAIL');
    document.body.dataset.selftest = out.join(' ');
  }
})();
