// Chronos web console. Plain DOM, no framework, no network but the
// instance's own API. Text from the server is only ever set as textContent.
'use strict';

const TOKEN_KEY = 'chronos-token';
const state = { who: null, timer: null, prev: null };

// ---- DOM helpers -----------------------------------------------------------

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const kid of kids.flat()) {
    if (kid === undefined || kid === null || kid === false) continue;
    e.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return e;
}

// swap replaces a node's children, leaving out null, undefined and false.
function swap(node, ...kids) {
  node.replaceChildren(...kids.flat().filter((k) => k !== null && k !== undefined && k !== false));
}

function show(...nodes) {
  swap(document.getElementById('main'), ...nodes);
}

function errorBox(err) {
  return el('p', { class: 'error', role: 'alert' }, String(err && err.message ? err.message : err));
}

// ---- API -------------------------------------------------------------------

function token() { return sessionStorage.getItem(TOKEN_KEY) || ''; }

class APIError extends Error {
  constructor(status, problem) {
    super(problem && problem.detail ? `${status}: ${problem.detail}` : `HTTP ${status}`);
    this.status = status;
    this.problem = problem || {};
  }
}

async function call(method, path, body) {
  const headers = { Accept: 'application/json' };
  const t = token();
  if (t) headers.Authorization = 'Bearer ' + t;
  const init = { method, headers, credentials: 'omit', cache: 'no-store', redirect: 'error' };
  if (method === 'POST' || method === 'PUT') {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body || {});
  }
  const resp = await fetch(path, init);
  const text = await resp.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (_) { data = null; }
  if (!resp.ok) {
    if (resp.status === 401 && path !== '/v1/whoami') { signIn('Your token was refused; sign in again.'); }
    throw new APIError(resp.status, data);
  }
  return data;
}

const enc = encodeURIComponent;
const canWrite = () => state.who && (state.who.role === 'write' || state.who.role === 'admin');
const owns = (name) => !state.who || !state.who.prefix || name.startsWith(state.who.prefix);

// ---- sign in ---------------------------------------------------------------

function signIn(message) {
  state.who = null;
  sessionStorage.removeItem(TOKEN_KEY);
  document.getElementById('who').textContent = '';
  document.getElementById('signout').hidden = true;
  const input = el('input', { id: 'token', type: 'password', autocomplete: 'off', required: true,
    placeholder: 'chronos_…', 'aria-label': 'API token' });
  const form = el('form', { id: 'signin', class: 'card narrow' },
    el('h1', {}, 'Sign in'),
    el('p', { class: 'muted' }, 'This instance requires an API token. It is kept in this tab only and sent to this instance only.'),
    message ? el('p', { class: 'error' }, message) : null,
    el('label', { for: 'token' }, 'Token'), input,
    el('button', { type: 'submit' }, 'Sign in'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, input.value.trim());
    boot();
  });
  show(form);
  input.focus();
}

async function boot() {
  try {
    state.who = await call('GET', '/v1/whoami');
  } catch (err) {
    if (err.status === 401) { signIn(token() ? 'That token was refused.' : ''); return; }
    show(errorBox(err));
    return;
  }
  const w = state.who;
  document.getElementById('who').textContent =
    `${w.name} · ${w.role}` + (w.prefix ? ` · ${w.prefix}*` : '');
  document.getElementById('signout').hidden = !token();
  route();
}

// ---- router ----------------------------------------------------------------

function parseHash() {
  const h = location.hash.replace(/^#/, '') || '/';
  const [p, q] = h.split('?');
  return { parts: p.split('/').filter(Boolean).map(decodeURIComponent), query: new URLSearchParams(q || '') };
}

function route() {
  if (!state.who) return;
  clearInterval(state.timer);
  state.timer = null;
  const { parts, query } = parseHash();
  const page = parts[0] || 'overview';
  for (const a of document.querySelectorAll('[data-nav]')) {
    a.classList.toggle('active', a.dataset.nav === (page === 'job' ? 'jobs' : page));
  }
  switch (page) {
    case 'jobs': return jobsPage(query);
    case 'job': return jobPage(parts.slice(1).join('/'), query);
    case 'buckets': return bucketsPage(parts[1] || '', query);
    default: return overviewPage();
  }
}

// ---- overview --------------------------------------------------------------

// parseMetrics reads the Prometheus text format into [{name, labels, value}].
function parseMetrics(text) {
  const out = [];
  for (const line of text.split('\n')) {
    if (!line || line[0] === '#') continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels = {};
    const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
    let l;
    while ((l = re.exec(m[2] || '')) !== null) labels[l[1]] = l[2].replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

const sum = (ms, name) => ms.filter((m) => m.name === name).reduce((a, m) => a + m.value, 0);

// quantile estimates a quantile from cumulative histogram buckets
// [{le, count}] sorted by le, interpolating inside the bucket.
function quantile(q, buckets) {
  if (!buckets.length) return NaN;
  const total = buckets[buckets.length - 1].count;
  if (!(total > 0)) return NaN;
  const rank = q * total;
  let prevLe = 0, prevCount = 0;
  for (const b of buckets) {
    if (b.count >= rank) {
      if (b.le === Infinity) return prevLe;
      const inBucket = b.count - prevCount;
      return inBucket > 0 ? prevLe + (b.le - prevLe) * ((rank - prevCount) / inBucket) : b.le;
    }
    prevLe = b.le; prevCount = b.count;
  }
  return prevLe;
}

function delayBuckets(ms) {
  return ms.filter((m) => m.name === 'chronos_fire_delay_seconds_bucket')
    .map((m) => ({ le: m.labels.le === '+Inf' ? Infinity : Number(m.labels.le), count: m.value }))
    .sort((a, b) => a.le - b.le);
}

function fmtSeconds(s) {
  if (!Number.isFinite(s)) return '–';
  if (s < 1) return `${(s * 1000).toFixed(0)} ms`;
  return `${s.toFixed(2)} s`;
}

function stat(label, value, id) {
  return el('div', { class: 'stat', id }, el('div', { class: 'label' }, label), el('div', { class: 'value' }, value));
}

async function overviewPage() {
  const body = el('div', {}, el('p', { class: 'muted' }, 'Loading metrics…'));
  show(el('h1', {}, 'Overview'), body);
  const refresh = async () => {
    let ms, ready;
    try {
      const resp = await fetch('/metrics', { credentials: 'omit', cache: 'no-store' });
      if (!resp.ok) throw new Error(`/metrics: HTTP ${resp.status}`);
      ms = parseMetrics(await resp.text());
      const rz = await fetch('/readyz', { credentials: 'omit', cache: 'no-store' });
      const rj = await rz.json().catch(() => ({}));
      ready = rz.ok ? { ok: true, text: 'ready' } : { ok: false, text: rj.detail || `HTTP ${rz.status}` };
    } catch (err) {
      swap(body, errorBox(err));
      return;
    }
    const now = performance.now() / 1000;
    const fires = sum(ms, 'chronos_fires_total');
    const buckets = delayBuckets(ms);
    let rate = '–', recent = [];
    if (state.prev) {
      const dt = now - state.prev.t;
      if (dt > 0) rate = ((fires - state.prev.fires) / dt).toFixed(1);
      recent = buckets.map((b, i) => ({ le: b.le, count: b.count - (state.prev.buckets[i] ? state.prev.buckets[i].count : 0) }));
    }
    state.prev = { t: now, fires, buckets };
    const byTrigger = ms.filter((m) => m.name === 'chronos_fires_total');
    const jobs = ms.filter((m) => m.name === 'chronos_jobs');
    const lag = ms.filter((m) => m.name === 'chronos_consumergroup_lag_sum');
    const qs = [0.5, 0.9, 0.99];
    swap(body, 
      el('section', { class: 'stats' },
        stat('Readiness', ready.text, 'readiness'),
        stat('Fires / s', rate, 'fires-rate'),
        stat('Fires (total)', String(fires)),
        stat('Partitions owned', String(sum(ms, 'chronos_partitions_owned')), 'partitions'),
        stat('Jobs here', jobs.length ? String(jobs.reduce((a, m) => a + m.value, 0)) : '–')),
      el('p', { class: ready.ok ? 'ok' : 'error', id: 'ready-detail' }, ready.ok ? 'This instance is ready.' : `Not ready: ${ready.text}`),
      el('h2', {}, 'Fire delay'),
      el('table', { class: 'grid', id: 'delays' },
        el('thead', {}, el('tr', {}, el('th', {}, ''), qs.map((q) => el('th', {}, `p${Math.round(q * 100)}`)))),
        el('tbody', {},
          el('tr', {}, el('th', {}, 'last interval'), qs.map((q) => el('td', {}, fmtSeconds(quantile(q, recent))))),
          el('tr', {}, el('th', {}, 'since start'), qs.map((q) => el('td', {}, fmtSeconds(quantile(q, buckets))))))),
      el('h2', {}, 'Fires by trigger'),
      byTrigger.length ? el('table', { class: 'grid' }, el('tbody', {},
        byTrigger.map((m) => el('tr', {}, el('th', {}, m.labels.trigger || '–'), el('td', {}, String(m.value)))))) :
        el('p', { class: 'muted' }, 'No fires yet.'),
      el('h2', {}, 'Consumer lag per group'),
      lag.length ? el('table', { class: 'grid', id: 'lag' },
        el('thead', {}, el('tr', {}, el('th', {}, 'group'), el('th', {}, 'topic'), el('th', {}, 'lag'))),
        el('tbody', {}, lag.map((m) => el('tr', {}, el('td', {}, m.labels.consumergroup || ''), el('td', {}, m.labels.topic || ''), el('td', {}, String(m.value)))))) :
        el('p', { class: 'muted' }, 'No lag reported yet (the first scrape asks Kafka).'),
      jobs.length ? el('div', {}, el('h2', {}, 'Jobs in this instance\'s partitions'),
        el('table', { class: 'grid' }, el('tbody', {}, jobs.map((m) => el('tr', {}, el('th', {}, m.labels.state || ''), el('td', {}, String(m.value))))))) : null,
      el('p', { class: 'muted small' }, 'From this instance\'s own /metrics and /readyz, refreshed every 2 s. Each instance reports its own partitions.'));
  };
  await refresh();
  state.timer = setInterval(refresh, 2000);
}

// ---- jobs ------------------------------------------------------------------

function statusBadge(s) { return el('span', { class: `badge ${s}`, 'data-status': s }, s); }

async function jobsPage(query) {
  const prefix = query.get('prefix') || '';
  const bucket = query.get('bucket') || '';
  const status = query.get('status') || '';
  const cursor = query.get('cursor') || '';
  const filters = el('form', { id: 'filters', class: 'filters' },
    el('input', { name: 'prefix', id: 'f-prefix', placeholder: 'id prefix', value: prefix, 'aria-label': 'id prefix' }),
    el('input', { name: 'bucket', id: 'f-bucket', placeholder: 'bucket', value: bucket, 'aria-label': 'bucket' }),
    el('select', { name: 'status', id: 'f-status', 'aria-label': 'state' },
      ['', 'active', 'paused', 'completed'].map((s) => el('option', { value: s, selected: s === status }, s || 'any state'))),
    el('button', { type: 'submit' }, 'Search'));
  filters.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const q = new URLSearchParams();
    for (const k of ['prefix', 'bucket', 'status']) {
      const v = filters.elements[k].value.trim();
      if (v) q.set(k, v);
    }
    location.hash = '#/jobs' + (q.toString() ? '?' + q : '');
  });
  const list = el('div', {}, el('p', { class: 'muted' }, 'Loading…'));
  show(el('h1', {}, 'Jobs'), filters, list);
  const q = new URLSearchParams({ limit: '50' });
  if (prefix) q.set('prefix', prefix);
  if (bucket) q.set('bucket', bucket);
  if (status) q.set('status', status);
  if (cursor) q.set('cursor', cursor);
  let page;
  try {
    page = await call('GET', '/v1/jobs?' + q);
  } catch (err) {
    swap(list, errorBox(err));
    return;
  }
  const rows = page.jobs.map((j) => el('tr', { 'data-id': j.id },
    el('td', {}, el('a', { href: '#/job/' + enc(j.id), class: 'job-link' }, j.id)),
    el('td', {}, statusBadge(j.status)),
    el('td', {}, j.bucket ? el('a', { href: '#/buckets/' + enc(j.bucket) }, j.bucket) : ''),
    el('td', { class: 'num' }, String(j.version))));
  const here = new URLSearchParams(query);
  here.delete('cursor');
  const base = '#/jobs' + (here.toString() ? '?' + here : '');
  const next = new URLSearchParams(here);
  if (page.next_cursor) next.set('cursor', page.next_cursor);
  swap(list, 
    el('table', { class: 'grid wide', id: 'jobs' },
      el('thead', {}, el('tr', {}, el('th', {}, 'id'), el('th', {}, 'state'), el('th', {}, 'bucket'), el('th', {}, 'version'))),
      el('tbody', {}, rows)),
    rows.length ? null : el('p', { class: 'muted', id: 'no-jobs' }, page.next_cursor ? 'None on this page; there are more.' : 'No jobs match.'),
    el('p', { class: 'pager' },
      cursor ? el('a', { href: base, id: 'first-page' }, '« first page') : null, ' ',
      page.next_cursor ? el('a', { href: '#/jobs?' + next, id: 'next-page' }, 'next page »') : null));
}

// ---- one job ---------------------------------------------------------------

// zoneParts returns a time's wall clock and UTC offset in a time zone.
function zoneParts(date, tz) {
  const opts = { year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit',
    hourCycle: 'h23', weekday: 'short', timeZoneName: 'longOffset' };
  let f, note = '';
  try {
    f = new Intl.DateTimeFormat('en-CA', { ...opts, timeZone: tz });
  } catch (e) {
    // A zone Chronos knows (its own zone database) that this browser's
    // does not, such as Factory: show UTC and say so, not a blank page.
    f = new Intl.DateTimeFormat('en-CA', { ...opts, timeZone: 'UTC' });
    note = ` (${tz} is unknown to this browser: shown in UTC)`;
  }
  const p = Object.fromEntries(f.formatToParts(date).map((x) => [x.type, x.value]));
  const offset = (p.timeZoneName || 'GMT').replace('GMT', 'UTC') || 'UTC';
  return { wall: `${p.weekday} ${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second}`, offset: (offset === 'UTC' ? 'UTC+00:00' : offset) + note };
}

// offsetMinutes returns a zone's UTC offset at a time, in minutes.
function offsetMinutes(date, tz) {
  const m = /UTC([+-])(\d\d):(\d\d)/.exec(zoneParts(date, tz).offset);
  return m ? (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3])) : 0;
}

// wallToUTC returns the instant a wall clock "YYYY-MM-DDTHH:MM" shows in a
// zone (in a gap, the instant after it; in an overlap, the first).
function wallToUTC(wall, tz) {
  const m = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d)/.exec(wall);
  if (!m) return new Date(wall);
  const asUTC = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]));
  // The offsets a day before and after cover both sides of a transition
  // at this wall clock; each gives a candidate instant, which is one the
  // wall clock shows if the zone has that offset there.
  const day = 86400000;
  const cands = [...new Set([offsetMinutes(new Date(asUTC - day), tz), offsetMinutes(new Date(asUTC + day), tz)])]
    .map((o) => ({ o, t: asUTC - o * 60000 }));
  const shown = cands.filter((c) => offsetMinutes(new Date(c.t), tz) === c.o).map((c) => c.t);
  if (shown.length) return new Date(Math.min(...shown)); // an overlap: the first
  // A gap: the wall clock never shows; the instant after it is the
  // transition, between the candidates (found to the minute).
  let lo = Math.min(...cands.map((c) => c.t)), hi = Math.max(...cands.map((c) => c.t));
  const before = offsetMinutes(new Date(lo), tz);
  while (hi - lo > 60000) {
    const mid = lo + Math.floor((hi - lo) / 120000) * 60000;
    if (offsetMinutes(new Date(mid), tz) === before) lo = mid; else hi = mid;
  }
  return new Date(hi);
}

// scheduleText says a job's schedule: its cron, every or at, or each of
// its schedules (with its zone when it has one).
function scheduleText(def) {
  const one = (s) => (s.cron ? `cron ${s.cron}` : s.every ? `every ${s.every}` : s.at ? `at ${s.at}` : '?') + (s.tz && s !== def ? ` (${s.tz})` : '');
  if (def.cron || def.every || def.at) return one(def);
  if (def.schedules && def.schedules.length) return def.schedules.map(one).join('; ');
  return 'none';
}

// jobZone is the zone a job's times are shown in: its tz, or the zone
// all its schedules share; UTC for schedules in several zones (or none).
function jobZone(def) {
  if (def.tz) return def.tz;
  const zones = [...new Set((def.schedules || []).map((s) => s.tz || 'UTC'))];
  return zones.length === 1 ? zones[0] : 'UTC';
}

function timeline(fires, tz) {
  if (!fires.length) return el('p', { class: 'muted', id: 'timeline' }, 'No upcoming fires.');
  const times = fires.map((f) => new Date(f));
  const t0 = times[0].getTime(), t1 = times[times.length - 1].getTime();
  const bar = el('div', { class: 'axis' });
  const items = [];
  let prevOffset = null;
  times.forEach((t, i) => {
    const z = zoneParts(t, tz);
    const frac = t1 > t0 ? (t.getTime() - t0) / (t1 - t0) : 0.5;
    const dot = el('span', { class: 'dot', title: `${z.wall} ${z.offset}` });
    dot.style.left = `${(frac * 100).toFixed(3)}%`;
    bar.append(dot);
    if (prevOffset !== null && z.offset !== prevOffset) {
      const mark = el('span', { class: 'dst-mark', title: `DST: ${prevOffset} → ${z.offset}` });
      const prevFrac = t1 > t0 ? (times[i - 1].getTime() - t0) / (t1 - t0) : 0.5;
      mark.style.left = `${(((prevFrac + frac) / 2) * 100).toFixed(3)}%`;
      bar.append(mark);
      items.push(el('li', { class: 'dst' }, `Clocks change: ${prevOffset} → ${z.offset} (${tz})`));
    }
    prevOffset = z.offset;
    items.push(el('li', { class: 'fire', value: String(i + 1) }, el('time', { datetime: t.toISOString() }, z.wall), ' ',
      el('span', { class: 'muted' }, z.offset), ' ', el('span', { class: 'muted small' }, t.toISOString())));
  });
  return el('div', { id: 'timeline' }, el('div', { class: 'timeline' }, bar), el('ol', { class: 'fires' }, items));
}

function fmtTime(v) { return v ? String(v).replace('T', ' ').replace(/\.\d+Z$/, 'Z') : ''; }

function historyTable(id, fires) {
  if (!fires.length) return el('p', { class: 'muted', id }, 'None yet.');
  return el('table', { class: 'grid wide', id },
    el('thead', {}, el('tr', {}, ['fire', 'scheduled', 'dispatched', 'delay', 'outcome', 'duration'].map((c) => el('th', {}, c)))),
    el('tbody', {}, fires.map((f) => el('tr', { 'data-fire': f.fire_id },
      el('td', {}, el('code', {}, f.fire_id), f.trigger && f.trigger !== 'schedule' ? el('span', { class: 'muted small' }, ` ${f.trigger}`) : null),
      el('td', {}, fmtTime(f.scheduled_at)),
      el('td', {}, fmtTime(f.dispatched_at)),
      el('td', { class: 'num' }, f.delay_seconds !== undefined ? fmtSeconds(f.delay_seconds) : ''),
      el('td', {}, el('span', { class: `badge ${f.status}`, 'data-outcome': f.status }, f.status),
        f.attempt ? el('span', { class: 'muted small' }, ` attempt ${f.attempt}`) : null,
        f.error ? el('div', { class: 'error small' }, f.error) : null),
      el('td', { class: 'num' }, f.duration_seconds !== undefined ? fmtSeconds(f.duration_seconds) : '')))));
}

function changesTable(id, changes) {
  if (!changes.length) return el('p', { class: 'muted', id }, 'None yet.');
  return el('table', { class: 'grid wide', id }, el('thead', {}, el('tr', {}, ['at', 'who', 'what', 'detail'].map((c) => el('th', {}, c)))),
    el('tbody', {}, changes.map((c) => el('tr', {},
      el('td', {}, fmtTime(c.at)), el('td', {}, c.actor || el('span', { class: 'muted' }, 'not via the API')), el('td', {}, c.op),
      el('td', {}, c.detail ? el('code', {}, c.detail) : '')))));
}

// optional fetches a route another part of Chronos may not serve yet: null
// when the instance has no such route.
async function optional(path) {
  try {
    return await call('GET', path);
  } catch (err) {
    if (err.status === 404 && /no route/.test(err.problem.detail || '')) return null;
    if (err.status === 503 && err.problem.code === 'history_unavailable') return null;
    throw err;
  }
}

async function jobPage(id, query) {
  const from = query.get('from') || '';
  const msg = el('p', { id: 'action-result', role: 'status' });
  show(el('h1', {}, 'Job ', el('code', {}, id)), msg, el('p', { class: 'muted' }, 'Loading…'));
  const q = new URLSearchParams({ next: '20' });
  let job;
  try {
    if (from) {
      // The time typed is a wall clock in the job's zone.
      const plain = await call('GET', `/v1/jobs/${enc(id)}`);
      q.set('from', wallToUTC(from, jobZone(plain.job)).toISOString());
    }
    job = await call('GET', `/v1/jobs/${enc(id)}?${q}`);
  } catch (err) {
    show(el('h1', {}, 'Job ', el('code', {}, id)), errorBox(err));
    return;
  }
  const tz = jobZone(job.job);
  const act = (label, method, path, cls) => el('button', { type: 'button', class: cls || '', id: 'btn-' + label.toLowerCase().replace(/\s+/g, '-'),
    onclick: async (ev) => {
      const b = ev.currentTarget;
      if (cls === 'danger' && b.dataset.armed !== '1') { b.dataset.armed = '1'; b.textContent = 'Really delete?'; return; }
      b.disabled = true;
      try {
        const r = await call(method, path, {});
        msg.className = 'ok';
        msg.textContent = `${label}: accepted` + (r && r.offset !== undefined ? ` (partition ${r.partition}, offset ${r.offset})` : '');
        if (method === 'DELETE') { setTimeout(() => { location.hash = '#/jobs'; }, 800); return; }
        waitForChange(id, job.version, label);
      } catch (err) {
        msg.className = 'error';
        msg.textContent = `${label}: ${err.message}`;
      } finally { b.disabled = false; }
    } }, label);
  const writable = canWrite() && owns(id);
  const buttons = writable ? el('div', { class: 'actions', id: 'actions' },
    job.status === 'paused' ? act('Resume', 'POST', `/v1/jobs/${enc(id)}/resume`) : act('Pause', 'POST', `/v1/jobs/${enc(id)}/pause`),
    act('Fire now', 'POST', `/v1/jobs/${enc(id)}/fire`),
    act('Delete', 'DELETE', `/v1/jobs/${enc(id)}`, 'danger')) : el('p', { class: 'muted small', id: 'read-only' }, 'Read-only: your token cannot change this job.');
  const fromForm = el('form', { class: 'filters', id: 'from-form' },
    el('label', { for: 'from' }, `Next fires from (${tz} wall clock) `),
    el('input', { type: 'datetime-local', id: 'from', name: 'from', value: from }),
    el('button', { type: 'submit' }, 'Show'));
  fromForm.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const v = fromForm.elements.from.value;
    location.hash = `#/job/${enc(id)}` + (v ? '?from=' + enc(v) : '');
  });
  const dl = el('dl', { class: 'props' },
    el('dt', {}, 'State'), el('dd', {}, statusBadge(job.status)),
    el('dt', {}, 'Schedule'), el('dd', {}, scheduleText(job.job)),
    el('dt', {}, 'Time zone'), el('dd', {}, tz),
    el('dt', {}, 'Bucket'), el('dd', {}, job.job.bucket ? el('a', { href: '#/buckets/' + enc(job.job.bucket) }, job.job.bucket) : '–'),
    el('dt', {}, 'Version'), el('dd', { id: 'version' }, String(job.version)),
    el('dt', {}, 'Created'), el('dd', {}, job.created_at),
    el('dt', {}, 'Updated'), el('dd', {}, job.updated_at),
    el('dt', {}, 'Last fire'), el('dd', { id: 'last-fire' }, job.last_fire ? `${job.last_fire.scheduled_at} (${job.last_fire.fire_id})` : '–'));
  const fires = el('div', { id: 'recent' }, el('p', { class: 'muted' }, 'Loading…'));
  const changes = el('div', { id: 'changes' }, el('p', { class: 'muted' }, 'Loading…'));
  show(el('h1', {}, 'Job ', el('code', {}, id)), msg, buttons, dl,
    el('h2', {}, `Next fires (${tz})`), fromForm, timeline(job.next_fires || [], tz),
    el('h2', {}, 'Recent fires'), fires,
    el('h2', {}, 'Change history'), changes,
    el('h2', {}, 'Definition'), el('pre', { class: 'def', id: 'definition' }, JSON.stringify(job.job, null, 2)));
  const fill = async (box, path, key, render, tableId) => {
    try {
      const r = await optional(path);
      if (r === null) { swap(box, el('p', { class: 'muted' }, 'This instance keeps no history (--no-history).')); return; }
      const items = Array.isArray(r) ? r : (r[key] || []);
      swap(box, render(tableId, items));
    } catch (err) { swap(box, errorBox(err)); }
  };
  fill(fires, `/v1/jobs/${enc(id)}/fires`, 'fires', historyTable, 'fires-table');
  fill(changes, `/v1/jobs/${enc(id)}/history`, 'changes', changesTable, 'history-table');
  state.timer = setInterval(() => fill(fires, `/v1/jobs/${enc(id)}/fires`, 'fires', historyTable, 'fires-table'), 3000);
}

// waitForChange re-reads a job until its version moves past seen (or 10 s
// pass), then redraws the page.
async function waitForChange(id, seen, label) {
  const hash = location.hash;
  const deadline = Date.now() + 10000;
  while (Date.now() < deadline && location.hash === hash) {
    try {
      const j = await call('GET', `/v1/jobs/${enc(id)}`);
      if (j.version !== seen || label === 'Fire now') break;
    } catch (_) { break; }
    await new Promise((r) => setTimeout(r, 300));
  }
  if (location.hash === hash) {
    const keep = document.getElementById('action-result');
    const text = keep ? keep.textContent : '';
    await jobPage(id, parseHash().query);
    const m = document.getElementById('action-result');
    if (m) { m.className = 'ok'; m.textContent = text; }
  }
}

// ---- buckets ---------------------------------------------------------------

async function bucketsPage(bucket) {
  const form = el('form', { class: 'filters', id: 'bucket-form' },
    el('input', { name: 'bucket', id: 'bucket', placeholder: 'bucket name', value: bucket, 'aria-label': 'bucket', required: true }),
    el('button', { type: 'submit' }, 'Open'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    location.hash = '#/buckets/' + enc(form.elements.bucket.value.trim());
  });
  if (!bucket) {
    show(el('h1', {}, 'Buckets'), form,
      el('p', { class: 'muted' }, 'A bucket is a name jobs share; triggering it fires all of its jobs at once. Open one by name, or follow a bucket link from the jobs list.'));
    return;
  }
  const msg = el('p', { id: 'trigger-result', role: 'status' });
  const writable = canWrite() && owns(bucket);
  const trigger = writable ? el('button', { type: 'button', id: 'btn-trigger', onclick: async (ev) => {
    const b = ev.currentTarget;
    b.disabled = true;
    try {
      const r = await call('POST', `/v1/buckets/${enc(bucket)}/trigger`, {});
      msg.className = 'ok';
      msg.textContent = `Triggered: ${r.trigger_id} (partition ${r.partition}, offset ${r.offset})`;
    } catch (err) {
      msg.className = 'error';
      msg.textContent = `Trigger: ${err.message}`;
    } finally { b.disabled = false; }
  } }, 'Trigger bucket') : el('p', { class: 'muted small', id: 'read-only' }, 'Read-only: your token cannot trigger this bucket.');
  const list = el('div', {}, el('p', { class: 'muted' }, 'Loading…'));
  show(el('h1', {}, 'Bucket ', el('code', {}, bucket)), form, trigger, msg, list);
  try {
    const page = await call('GET', `/v1/jobs?limit=100&bucket=${enc(bucket)}`);
    swap(list, el('h2', {}, 'Jobs in this bucket'),
      page.jobs.length ? el('table', { class: 'grid wide', id: 'bucket-jobs' }, el('tbody', {}, page.jobs.map((j) => el('tr', {},
        el('td', {}, el('a', { href: '#/job/' + enc(j.id) }, j.id)), el('td', {}, statusBadge(j.status)))))) :
        el('p', { class: 'muted' }, 'No jobs on the first page.'),
      page.next_cursor ? el('p', {}, el('a', { href: '#/jobs?bucket=' + enc(bucket) }, 'all of this bucket\'s jobs »')) : null);
  } catch (err) {
    swap(list, errorBox(err));
  }
}

// ---- start -----------------------------------------------------------------

window.addEventListener('hashchange', route);
document.addEventListener('DOMContentLoaded', () => {
  document.getElementById('signout').addEventListener('click', () => signIn(''));
  boot();
});
