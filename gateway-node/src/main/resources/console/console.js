/*
 * Clawfleet operator console: one page, served by the gateway under /console with a strict CSP (script-src 'self',
 * style-src 'self', connect-src 'self'), so everything here is built with createElement and text nodes: no inline
 * styles, no inline handlers, and never innerHTML, because chat text and names are untrusted.
 *
 * The key is kept in sessionStorage only and sent as "Authorization: Bearer" on every call. Pages are hash routes
 * (#/cluster, #/t/<tenant>/b/<bot>/chats, ...) rendered in place: after sign-in the page is never reloaded.
 * Live news comes from one long-lived fetch of /console/api/events read as server-sent events (EventSource cannot send
 * the Authorization header): `cluster` repaints the cluster page, `tenant` makes a tenant's list pages fetch again.
 */

// The browser test checks this is unchanged at its end: nothing reloaded the page.
window.__consoleBoot = Math.random();

const API = '/console/api';
const KEY_STORE = 'clawfleet.console.key';
const PAGE_SIZE = 50;
const NO_VALUE = '—';

const state = {
  key: null,
  session: null,
  view: null, // the page shown: {route, def, section, heading, body, notice, state, loads, data}
  cluster: null, // the latest CLUSTER, from the stream or GET /cluster
  summaries: new Map(), // tenant id -> JSON of its latest TENANT_SUMMARY
  bots: new Map(), // tenant id -> its bots, for the bot picker
  lastBot: new Map(), // tenant id -> the bot last looked at, so that tabs still work from the audit page
  streamTenant: null,
  streaming: false,
  streamGeneration: 0,
  streamAbort: null,
  live: false,
};

const $ = (selector) => document.querySelector(selector);
const bar = $('#bar');
const mainNav = $('#nav');
const main = $('#main');
const statusRegion = $('#status');
const liveBadge = $('#live');

// ---- DOM helpers ----

// el('a', {href: '#/x', 'data-id': 1, onclick: fn}, 'text', child, [more]): attributes are set with setAttribute
// (true gives an empty attribute; null, undefined and false leave it out), on* functions become listeners, and
// children that are not nodes become text nodes: data never goes through the HTML parser.
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) {
      continue;
    }
    if (name.startsWith('on') && typeof value === 'function') {
      node.addEventListener(name.slice(2), value);
    } else {
      node.setAttribute(name, value === true ? '' : String(value));
    }
  }
  for (const child of children.flat(Infinity)) {
    if (child !== null && child !== undefined && child !== false) {
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
  }
  return node;
}

function table(caption, columns, rows) {
  return el('table', {},
    el('caption', {}, caption),
    el('thead', {}, el('tr', {}, columns.map((column) => el('th', {scope: 'col'}, column)))),
    el('tbody', {}, rows));
}

const emptyNote = (rows, text) => (rows.length ? null : el('p', {class: 'muted', 'data-empty': true}, text));
const button = (label, onclick, attrs) => el('button', {type: 'button', ...attrs, onclick}, label);
const REBALANCE_WINDOW_MS = 10 * 60 * 1000;
const orDash = (value) => (value === null || value === undefined || value === '' ? NO_VALUE : value);
const pad = (n) => String(n).padStart(2, '0');
const seconds = (value) => (value === null || value === undefined ? NO_VALUE : `${Number(value).toFixed(1)} s`);
// Arguments and such: shown as the JSON they are.
const json = (value) => (value === null || value === undefined ? ''
  : typeof value === 'string' ? value : JSON.stringify(value));

// Local date and time as 2025-01-31 14:05:09: unambiguous, and sorts like the logs it is compared with.
function stamp(iso) {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? String(iso) : `${date.getFullYear()}-${pad(date.getMonth() + 1)}-`
    + `${pad(date.getDate())} ${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}

const when = (iso) => (iso ? el('time', {datetime: iso, title: iso}, stamp(iso)) : NO_VALUE);

// Announced by screen readers; emptied first so that the same message twice is announced twice.
function announce(message) {
  statusRegion.textContent = '';
  setTimeout(() => { statusRegion.textContent = message; }, 50);
}

// ---- the API ----

class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function api(path, {method = 'GET', key = state.key} = {}) {
  let response;
  try {
    response = await fetch(API + path, {method, cache: 'no-store',
      headers: {Authorization: 'Bearer ' + key, Accept: 'application/json'}});
  } catch (error) {
    throw new ApiError(0, 'unreachable', `The gateway cannot be reached (${error.message}).`);
  }
  const text = response.status === 204 ? '' : await response.text();
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch (error) {
    body = null;
  }
  if (!response.ok) {
    const problem = (body && body.error) || {};
    throw new ApiError(response.status, problem.code || `http_${response.status}`,
      problem.message || `The gateway answered ${response.status}.`);
  }
  return body || {};
}

const enc = encodeURIComponent;
const tenantPath = (route) => `/tenants/${enc(route.tenant)}`;
const botPath = (route) => `${tenantPath(route)}/bots/${enc(route.bot)}`;

// ---- routes ----

const BOT_PAGES = ['chats', 'dead-letters', 'tasks', 'sandbox-runs'];
const TAB_LABELS = {chats: 'Chats', 'dead-letters': 'Dead letters', tasks: 'Tasks', 'sandbox-runs': 'Sandbox runs',
  audit: 'Audit', bots: 'Bots'};

function parseRoute(hash) {
  let parts;
  try {
    // Split before decoding: a chat key may hold an encoded "/".
    parts = hash.replace(/^#\/?/, '').split('/').filter((part) => part !== '').map(decodeURIComponent);
  } catch (error) {
    return null; // a malformed %-escape
  }
  const [first, tenant, kind, bot, page, channel, chatKey] = parts;
  if (parts.length === 1 && (first === 'cluster' || first === 'tenants')) {
    return {page: first};
  }
  if (first !== 't') {
    return null;
  }
  if (parts.length === 3 && (kind === 'bots' || kind === 'audit')) {
    return {page: kind, tenant};
  }
  if (kind === 'b' && parts.length === 5 && BOT_PAGES.includes(page)) {
    return {page, tenant, bot};
  }
  if (kind === 'b' && parts.length === 7 && page === 'chat') {
    return {page: 'transcript', tenant, bot, channel, chatKey};
  }
  return null;
}

function hashOf(route) {
  if (!route.tenant) {
    return `#/${route.page}`;
  }
  const tenant = `#/t/${enc(route.tenant)}`;
  if (!route.bot) {
    return `${tenant}/${route.page}`;
  }
  const bot = `${tenant}/b/${enc(route.bot)}`;
  return route.page === 'transcript' ? `${bot}/chat/${enc(route.channel)}/${enc(route.chatKey)}` : `${bot}/${route.page}`;
}

const chatLink = (tenant, bot, channel, chatKey, text) =>
  el('a', {href: hashOf({page: 'transcript', tenant, bot, channel, chatKey})}, text);
const isOperator = () => Boolean(state.session && state.session.role === 'operator');
const defaultRoute = () => (isOperator() ? {page: 'cluster'} : {page: 'bots', tenant: state.session.tenant.id});
// A tenant admin sees their own tenant's pages only (the gateway checks it too).
const allowed = (route) => isOperator() || (route.tenant !== undefined && route.tenant === state.session.tenant.id);

// Renders the page of the current hash: a new <section> whose <h1> takes the focus, then its data.
function show() {
  if (!state.session) {
    return;
  }
  let route = parseRoute(location.hash);
  if (!route || !allowed(route)) {
    route = defaultRoute();
    history.replaceState(null, '', hashOf(route)); // no hashchange, no reload
  }
  if (route.bot) {
    state.lastBot.set(route.tenant, route.bot);
  }
  // The operator's stream carries the news of one tenant: the one last opened (a tenant admin's, their own).
  const streamTenant = isOperator() ? route.tenant || state.streamTenant : null;
  if (!state.streaming || streamTenant !== state.streamTenant) {
    startStream(streamTenant);
  }
  const def = PAGES[route.page];
  const title = def.title(route);
  const view = {route, def, state: {}, loads: 0, data: null};
  view.heading = el('h1', {id: 'page-title', tabindex: '-1'}, title);
  view.notice = el('p', {class: 'notice error', role: 'alert', 'data-action-error': true});
  view.body = el('div', {class: 'page-body'}, el('p', {class: 'muted'}, 'Loading…'));
  view.section = el('section', {'data-page': route.page, 'data-state': 'loading', 'aria-labelledby': 'page-title'},
    route.tenant ? tenantNav(route) : null, view.heading, view.notice, def.frame ? def.frame(view) : null, view.body);
  state.view = view;
  main.replaceChildren(view.section);
  markNav(route);
  document.title = `${title} · Clawfleet console`;
  view.heading.focus();
  load(view, true);
}

// Fetches the page's data and paints it. Only the latest load of the page shown may paint: a slow answer to an
// older request is dropped.
async function load(view, announceIt) {
  const ticket = ++view.loads;
  view.section.setAttribute('aria-busy', 'true');
  try {
    const data = await view.def.load(view.route, view.state);
    if (view !== state.view || ticket !== view.loads) {
      return false;
    }
    paint(view, data);
    if (announceIt) {
      announce(view.def.loaded ? view.def.loaded(data, view) : `${view.def.title(view.route)} loaded.`);
    }
    return true;
  } catch (error) {
    if (view !== state.view || ticket !== view.loads) {
      return false;
    }
    if (error.status === 401) {
      signOut(error.message);
    } else if (!(view.def.failed && view.def.failed(view, error))) {
      view.body.replaceChildren(el('p', {class: 'notice error', 'data-error': error.code}, error.message));
      view.section.setAttribute('data-state', 'error');
      announce(error.message);
    }
    return false;
  } finally {
    if (view === state.view && ticket === view.loads) {
      view.section.removeAttribute('aria-busy');
    }
  }
}

function paint(view, data) {
  const focus = rememberFocus(view.body);
  view.data = data;
  const nodes = [view.def.render(data, view)].flat().filter(Boolean);
  if (view.route.page === 'cluster' && view.section.getAttribute('data-state') === 'ready') {
    morphChildren(view.body, nodes);
  } else {
    view.body.replaceChildren(...nodes);
  }
  view.section.setAttribute('data-state', 'ready');
  restoreFocus(view, focus);
}

// The cluster page is repainted in place: under load its lags change every second, and rows replaced that often
// would make a screen reader lose its place. Nodes are matched by position, kind and data-id (rows), and only what
// differs is changed. Only for that page: its rows carry no listeners that would have to move across.
function morphChildren(target, fresh) {
  const old = [...target.childNodes];
  fresh.forEach((node, i) => {
    if (!old[i]) {
      target.appendChild(node);
    } else if (sameKind(old[i], node)) {
      morph(old[i], node);
    } else {
      target.replaceChild(node, old[i]);
    }
  });
  old.slice(fresh.length).forEach((node) => node.remove());
}

function sameKind(a, b) {
  return a.nodeType === b.nodeType && a.nodeName === b.nodeName
    && (a.nodeType !== Node.ELEMENT_NODE || a.getAttribute('data-id') === b.getAttribute('data-id'));
}

function morph(old, fresh) {
  if (old.nodeType === Node.TEXT_NODE) {
    if (old.nodeValue !== fresh.nodeValue) {
      old.nodeValue = fresh.nodeValue;
    }
    return;
  }
  if (old.nodeType !== Node.ELEMENT_NODE) {
    return;
  }
  for (const {name} of [...old.attributes]) {
    if (!fresh.hasAttribute(name)) {
      old.removeAttribute(name);
    }
  }
  for (const {name, value} of [...fresh.attributes]) {
    if (old.getAttribute(name) !== value) {
      old.setAttribute(name, value);
    }
  }
  morphChildren(old, [...fresh.childNodes]);
}

// A repaint replaces the rows: the focus goes back to the same control of the same row (data-id), else to the
// first control of that row, else to the heading, so that a keyboard user is not thrown to the top of the page.
function rememberFocus(container) {
  const active = document.activeElement;
  if (!active || !container.contains(active)) {
    return null;
  }
  const row = active.closest('[data-id]');
  return {row: row ? row.getAttribute('data-id') : null, tag: active.tagName, text: active.textContent, id: active.id};
}

function restoreFocus(view, memory) {
  if (!memory || view.body.contains(document.activeElement)) {
    return;
  }
  const scope = memory.row === null ? view.body : view.body.querySelector(`[data-id="${CSS.escape(memory.row)}"]`);
  const controls = scope ? [...scope.querySelectorAll('a[href], button, input')] : [];
  const same = controls.find((node) => (memory.id && node.id === memory.id)
    || (node.tagName === memory.tag && node.textContent === memory.text));
  (same || controls[0] || view.heading).focus();
}

// Errors of a button's action: shown in the page's alert; 401 means the key is no longer good.
function actionFailed(view, error) {
  if (error.status === 401) {
    signOut(error.message);
    return;
  }
  if (view === state.view) {
    view.notice.textContent = error.message;
  }
}

// Runs a button's action once at a time. aria-disabled rather than disabled: a disabled button loses the focus.
async function act(view, control, work) {
  if (control.getAttribute('aria-disabled') === 'true') {
    return;
  }
  control.setAttribute('aria-disabled', 'true');
  view.notice.textContent = '';
  try {
    await work();
  } catch (error) {
    actionFailed(view, error);
  } finally {
    control.removeAttribute('aria-disabled');
  }
}

function replaceRow(view, selector, row) {
  const old = view.body.querySelector(selector);
  if (old) {
    const focus = rememberFocus(view.body);
    old.replaceWith(row);
    restoreFocus(view, focus);
  }
}

// ---- navigation ----

function markNav(route) {
  for (const link of document.querySelectorAll('nav a[data-route]')) {
    const current = link.getAttribute('href') === hashOf(route);
    if (current) {
      link.setAttribute('aria-current', 'page');
    } else {
      link.removeAttribute('aria-current');
    }
  }
}

function navLink(route, text) {
  return el('li', {}, el('a', {href: hashOf(route), 'data-route': route.page}, text));
}

function buildMainNav() {
  const tenant = state.session.tenant;
  const links = isOperator()
    ? [navLink({page: 'cluster'}, 'Cluster'), navLink({page: 'tenants'}, 'Tenants')]
    : [navLink({page: 'bots', tenant: tenant.id}, 'Bots'), navLink({page: 'audit', tenant: tenant.id}, 'Audit')];
  mainNav.replaceChildren(el('ul', {}, links));
}

// Inside a tenant's pages: the tenant's live summary, a bot picker and the tabs of the bot's pages.
function tenantNav(route) {
  const tenant = route.tenant;
  const bot = route.bot || state.lastBot.get(tenant) || null;
  const picker = el('ul', {class: 'bot-picker', 'data-bot-picker': true});
  const summary = el('p', {class: 'summary', 'data-tenant-summary': true});
  const known = state.summaries.get(tenant);
  if (known) {
    summary.textContent = summaryText(JSON.parse(known));
  }
  const tabs = bot ? BOT_PAGES.map((page) => navLink({page, tenant, bot}, TAB_LABELS[page])) : [];
  tabs.push(navLink({page: 'audit', tenant}, 'Audit'));
  fillBotPicker(route, picker);
  return el('nav', {class: 'tenant-nav', 'data-nav': 'tenant', 'aria-label': `Tenant ${tenant}`},
    el('p', {class: 'crumbs'}, 'Tenant ', el('a', {href: hashOf({page: 'bots', tenant}), 'data-route': 'bots'}, tenant),
      bot ? [' · bot ', el('strong', {}, bot)] : null),
    summary,
    el('div', {class: 'picker'}, el('span', {id: 'bot-picker-label'}, 'Bots:'), picker),
    el('ul', {class: 'tabs'}, tabs));
}

async function fillBotPicker(route, list) {
  try {
    if (!state.bots.has(route.tenant)) {
      state.bots.set(route.tenant, (await api(`${tenantPath(route)}/bots`)).bots || []);
    }
  } catch (error) {
    return; // the picker is a convenience; the bots page says what went wrong
  }
  const page = BOT_PAGES.includes(route.page) ? route.page : 'chats';
  list.setAttribute('aria-labelledby', 'bot-picker-label');
  list.replaceChildren(...state.bots.get(route.tenant).map((bot) => {
    const link = el('a', {href: hashOf({page, tenant: route.tenant, bot: bot.id})}, bot.name || bot.id);
    if (bot.id === route.bot) {
      link.setAttribute('aria-current', 'true');
    }
    return el('li', {}, link);
  }));
}

function summaryText(summary) {
  if (summary.gone) {
    return 'This tenant no longer exists.';
  }
  return `${summary.chats} chats · ${summary.openDeadLetters} open dead letters · `
    + `${summary.pendingApprovals} pending approvals · last message ${summary.lastMessageAt
      ? stamp(summary.lastMessageAt) : 'never'}`;
}

// ---- the live stream ----

function startStream(tenant) {
  stopStream();
  state.streaming = true;
  state.streamTenant = tenant || null;
  runStream(state.streamGeneration, state.streamTenant);
}

function stopStream() {
  state.streaming = false;
  state.streamGeneration++;
  if (state.streamAbort) {
    state.streamAbort.abort();
    state.streamAbort = null;
  }
}

function setLive(live) {
  if (live === state.live) {
    return;
  }
  const wasLive = state.live;
  state.live = live;
  liveBadge.setAttribute('data-live', live ? 'on' : 'off');
  liveBadge.textContent = live ? 'live' : 'reconnecting';
  if (wasLive && state.session) {
    announce('Live updates lost, reconnecting.');
  }
}

async function runStream(generation, tenant) {
  let failures = 0;
  while (generation === state.streamGeneration) {
    const controller = new AbortController();
    state.streamAbort = controller;
    try {
      const response = await fetch(`${API}/events${tenant ? `?tenant=${enc(tenant)}` : ''}`, {
        headers: {Authorization: 'Bearer ' + state.key, Accept: 'text/event-stream'},
        cache: 'no-store', signal: controller.signal});
      if (response.status === 401) {
        const body = await response.json().catch(() => ({}));
        signOut((body.error && body.error.message) || 'The key is no longer valid.');
        return;
      }
      if (!response.ok || !response.body) {
        throw new Error(`events: HTTP ${response.status}`);
      }
      failures = 0;
      setLive(true);
      await readEvents(response.body, (type, data) => {
        if (generation === state.streamGeneration) {
          dispatch(type, data);
        }
      });
    } catch (error) {
      if (generation !== state.streamGeneration) {
        return; // stopped on purpose: sign-out or another tenant
      }
      console.warn('console: event stream:', error.message);
    }
    if (generation !== state.streamGeneration) {
      return;
    }
    setLive(false);
    // 1 s, 2 s, 4 s, then 5 s; a little random so that consoles do not all come back at the same instant.
    const delay = Math.min(5000, 1000 * 2 ** failures + Math.random() * 500);
    failures++;
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
}

// Server-sent events: blocks separated by a blank line; "event: X" and "data: ..." lines; ":" starts a comment.
async function readEvents(body, onEvent) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const {value, done} = await reader.read();
    if (done) {
      return;
    }
    buffer += value;
    let end;
    while ((end = /\r\n\r\n|\n\n|\r\r/.exec(buffer))) {
      const block = buffer.slice(0, end.index);
      buffer = buffer.slice(end.index + end[0].length);
      parseBlock(block, onEvent);
    }
  }
}

function parseBlock(block, onEvent) {
  let type = 'message';
  const data = [];
  for (const line of block.split(/\r\n|\r|\n/)) {
    if (line === '' || line.startsWith(':')) {
      continue;
    }
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'event') {
      type = value;
    } else if (field === 'data') {
      data.push(value);
    }
  }
  if (!data.length) {
    return;
  }
  try {
    onEvent(type, JSON.parse(data.join('\n')));
  } catch (error) {
    console.warn('console: event not understood:', type, error.message);
  }
}

function dispatch(type, data) {
  if (type === 'cluster') {
    onCluster(data);
  } else if (type === 'tenant') {
    onTenant(data);
  } else if (type === 'signed-out') {
    // The gateway re-checks the key now and then: revoked, or its tenant suspended.
    signOut(data.reason || 'The key is no longer valid.');
  }
}

function onCluster(cluster) {
  state.cluster = cluster;
  const view = state.view;
  if (!view || view.route.page !== 'cluster' || JSON.stringify(cluster) === view.state.json) {
    return;
  }
  const first = view.section.getAttribute('data-state') === 'loading';
  view.loads++; // a GET still under way would bring older news than this
  view.section.removeAttribute('aria-busy');
  paint(view, cluster);
  if (first) {
    announce(view.def.loaded(cluster));
  }
}

function onTenant(summary) {
  const text = JSON.stringify(summary);
  const before = state.summaries.get(summary.tenant);
  state.summaries.set(summary.tenant, text);
  const view = state.view;
  if (!view || view.route.tenant !== summary.tenant) {
    return;
  }
  const line = view.section.querySelector('[data-tenant-summary]');
  if (line) {
    line.textContent = summaryText(summary);
  }
  // Something changed (or this is the first news since the stream started): the list shown may be out of date. A
  // first load still under way was asked for moments ago: it is as fresh.
  if (before !== text && view.def.live && !view.state.hidden && view.section.getAttribute('data-state') !== 'loading') {
    load(view, false);
  }
}

// ---- sign-in and sign-out ----

function showLogin(message) {
  bar.hidden = true;
  const input = el('input', {id: 'key', name: 'key', type: 'password', autocomplete: 'current-password',
    spellcheck: 'false', 'aria-describedby': 'login-error'});
  const error = el('p', {id: 'login-error', class: 'notice error', role: 'alert', 'data-login-error': true},
    message || '');
  const submit = el('button', {type: 'submit'}, 'Sign in');
  const form = el('form', {class: 'login-form', novalidate: true},
    el('label', {for: 'key'}, 'Key'), input, submit);
  form.addEventListener('submit', async (event) => {
    event.preventDefault(); // first: form-action 'none' forbids a real submission
    const key = input.value.trim();
    if (!key) {
      error.textContent = 'Enter your operator or tenant admin key.';
      input.focus();
      return;
    }
    if (submit.getAttribute('aria-disabled') === 'true') {
      return;
    }
    submit.setAttribute('aria-disabled', 'true');
    error.textContent = '';
    try {
      await signIn(key);
    } catch (failure) {
      error.textContent = failure.message;
      input.select();
      input.focus();
    } finally {
      submit.removeAttribute('aria-disabled');
    }
  });
  main.replaceChildren(el('section', {class: 'login', 'data-view': 'login', 'aria-labelledby': 'login-title'},
    el('h1', {id: 'login-title'}, 'Clawfleet console'),
    el('p', {class: 'muted'}, 'Sign in with an operator key or a tenant admin key.'),
    form, error));
  document.title = 'Sign in · Clawfleet console';
  input.focus();
  if (message) {
    announce(message);
  }
}

async function signIn(key) {
  const session = await api('/session', {key});
  sessionStorage.setItem(KEY_STORE, key);
  state.key = key;
  state.session = session;
  $('#who').textContent = session.role === 'operator' ? 'Operator'
    : `Tenant ${(session.tenant && (session.tenant.name || session.tenant.id)) || ''}`;
  $('#node').textContent = session.node || NO_VALUE;
  buildMainNav();
  bar.hidden = false;
  announce('Signed in.');
  show();
}

function signOut(message) {
  stopStream();
  sessionStorage.removeItem(KEY_STORE);
  Object.assign(state, {key: null, session: null, view: null, cluster: null, streamTenant: null});
  state.summaries.clear();
  state.bots.clear();
  state.lastBot.clear();
  setLive(false);
  if (!message) {
    // A sign-out on purpose forgets the page too: the next key may not see it. After a refused key the hash stays,
    // so that signing in again comes back to where one was.
    history.replaceState(null, '', location.pathname + location.search);
  }
  showLogin(message);
}

// ---- pages ----

function renderCluster(cluster, view) {
  view.state.json = JSON.stringify(cluster);
  const owners = Object.entries(cluster.partitionsByOwner || {}).sort(([a], [b]) => a.localeCompare(b));
  const members = (cluster.members || []).map((member) =>
    el('tr', {'data-id': member.nodeId, 'data-node': member.nodeId, 'data-self': member.self ? 'true' : 'false'},
      el('td', {}, member.nodeId, member.self ? [' ', el('strong', {class: 'tag'}, 'this node')] : null),
      el('td', {}, (member.roles || []).join(', ')),
      el('td', {}, orDash(member.http)),
      el('td', {class: 'text'}, Object.entries(member.attributes || {}).map(([k, v]) => `${k}=${json(v)}`).join(', '))));
  const partitions = (cluster.partitions || []).map((p) =>
    el('tr', {'data-id': p.partition, 'data-partition': p.partition, 'data-owner': p.owner || ''},
      el('td', {}, p.partition),
      el('td', {}, p.owner || el('em', {}, 'unowned'),
        p.expired ? [' ', el('strong', {class: 'tag warn'}, 'expired')] : null),
      el('td', {}, orDash(p.epoch)),
      el('td', {}, when(p.acquiredAt)),
      el('td', {class: 'num'}, seconds(p.lagSeconds))));
  // Rebalances: the partitions claimed in the last ten minutes (a claim raises the epoch), grouped by new owner and
  // second, newest first: a worker leaving shows as one row, "gateway-1 took 29 partitions".
  const groups = new Map();
  for (const p of cluster.partitions || []) {
    if (!p.acquiredAt || Date.now() - Date.parse(p.acquiredAt) >= REBALANCE_WINDOW_MS) continue;
    const second = p.acquiredAt.slice(0, 19);
    const key = `${second}|${p.owner || ''}`;
    if (!groups.has(key)) groups.set(key, {at: p.acquiredAt, owner: p.owner, partitions: []});
    groups.get(key).partitions.push(p.partition);
  }
  const recent = [...groups.values()].sort((a, b) => Date.parse(b.at) - Date.parse(a.at)).slice(0, 20)
    .map((g) => el('tr', {'data-id': `moved-${g.at}-${g.owner}`, 'data-moved': g.partitions.join(' ')},
      el('td', {}, when(g.at)), el('td', {}, g.owner || el('em', {}, 'unowned')), el('td', {class: 'num'}, g.partitions.length),
      el('td', {class: 'text'}, g.partitions.sort((a, b) => a - b).join(', '))));
  return [
    cluster.insecureCluster ? el('p', {class: 'banner warning', 'data-insecure-cluster': true},
      el('strong', {}, 'Insecure cluster: '),
      'the event bus runs in plain TCP without certificates',
      (cluster.insecureMembers || []).length ? ` on ${cluster.insecureMembers.join(', ')}` : '',
      '. Anyone who reaches the cluster ports can read and send bus traffic.') : null,
    el('p', {class: 'lead', 'data-partition-summary': true},
      `${cluster.partitionCount} partitions: ${owners.map(([owner, n]) => `${owner} ${n}`).join(', ') || 'none owned'}`),
    el('dl', {class: 'facts'},
      el('div', {}, el('dt', {}, 'Unowned'), el('dd', {'data-unowned': true}, cluster.unowned)),
      el('div', {}, el('dt', {}, 'Max lag'), el('dd', {}, seconds(cluster.maxLagSeconds))),
      el('div', {}, el('dt', {}, 'Oldest undelivered reply'), el('dd', {}, seconds(cluster.outboxOldestSeconds)))),
    table(`Members (${members.length})`, ['Node', 'Roles', 'HTTP', 'Attributes'], members),
    table('Rebalances in the last 10 minutes', ['Claimed', 'New owner', 'Count', 'Partitions'], recent),
    emptyNote(recent, 'No partition changed owner in the last 10 minutes.'),
    table('Partitions', ['Partition', 'Owner', 'Epoch', 'Since', 'Lag'], partitions),
  ];
}

function limited(used, limit) {
  return `${used ?? 0} / ${limit === null || limit === undefined ? NO_VALUE : limit}`;
}

function tenantRow(view, tenant) {
  const usage = tenant.usage || {};
  const limits = tenant.limits || {};
  const suspended = tenant.status === 'suspended';
  const toggle = button(suspended ? 'Resume' : 'Suspend', () => act(view, toggle, async () => {
    const verb = suspended ? 'resume' : 'suspend';
    const answer = await api(`/tenants/${enc(tenant.id)}/${verb}`, {method: 'POST'});
    Object.assign(tenant, answer.tenant || {});
    if (view === state.view) {
      replaceRow(view, `tr[data-tenant="${CSS.escape(tenant.id)}"]`, tenantRow(view, tenant));
      announce(`Tenant ${tenant.name || tenant.id} ${verb === 'suspend' ? 'suspended' : 'resumed'}.`);
    }
  }));
  return el('tr', {'data-id': tenant.id, 'data-tenant': tenant.id, 'data-status': tenant.status},
    el('td', {}, tenant.id),
    el('td', {}, orDash(tenant.name)),
    el('td', {}, el('span', {class: `status status-${tenant.status}`}, tenant.status)),
    el('td', {class: 'num'}, orDash(tenant.bots)),
    el('td', {class: 'num'}, orDash(tenant.openDeadLetters)),
    el('td', {class: 'num'}, usage.messagesToday ?? 0),
    el('td', {class: 'num'}, limited(usage.tokensToday, limits.tokensPerDay)),
    el('td', {class: 'num'}, limited(usage.tokensThisMonth, limits.tokensPerMonth)),
    el('td', {class: 'actions'}, toggle, ' ', el('a', {href: hashOf({page: 'bots', tenant: tenant.id})}, 'Open')));
}

function renderTenants(tenants, view) {
  const rows = tenants.map((tenant) => tenantRow(view, tenant));
  return [table(`Tenants (${rows.length})`, ['ID', 'Name', 'Status', 'Bots', 'Open dead letters', 'Messages today',
    'Tokens today / limit', 'Tokens this month / limit', 'Actions'], rows), emptyNote(rows, 'No tenants.')];
}

function renderBots(bots, view) {
  const {tenant} = view.route;
  state.bots.set(tenant, bots);
  const rows = bots.map((bot) => el('tr', {'data-id': bot.id, 'data-bot': bot.id},
    el('td', {}, el('a', {href: hashOf({page: 'chats', tenant, bot: bot.id})}, bot.id)),
    el('td', {}, orDash(bot.name)),
    el('td', {}, orDash(bot.status))));
  return [table(`Bots (${rows.length})`, ['Bot', 'Name', 'Status'], rows), emptyNote(rows, 'No bots.')];
}

// The search form stays while the results below it are repainted, so that typing is never interrupted.
function chatSearch(view) {
  const input = el('input', {id: 'chat-search', name: 'q', type: 'search', autocomplete: 'off'});
  const form = el('form', {class: 'search', role: 'search', novalidate: true},
    el('label', {for: 'chat-search'}, 'Search chats'), input, el('button', {type: 'submit'}, 'Search'));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    view.state.q = input.value.trim();
    if (await load(view, false)) {
      const n = view.data.length;
      announce(`${n} ${n === 1 ? 'chat' : 'chats'} found.`);
    }
  });
  return form;
}

function renderChats(chats, view) {
  const {tenant, bot} = view.route;
  view.section.setAttribute('data-query', view.state.q || '');
  const rows = chats.map((chat) => el('tr',
    {'data-id': `${chat.channel}/${chat.chatId}`, 'data-chat': chat.chatId, 'data-channel': chat.channel},
    el('td', {}, chatLink(tenant, bot, chat.channel, chat.chatId, chat.chatId)),
    el('td', {}, chat.channel),
    el('td', {}, orDash(chat.name)),
    el('td', {class: 'num'}, orDash(chat.messages)),
    el('td', {}, when(chat.lastMessageAt))));
  return [table(view.state.q ? `Chats matching “${view.state.q}” (${rows.length})` : `Chats (${rows.length})`,
    ['Chat', 'Channel', 'Name', 'Messages', 'Last message'], rows), emptyNote(rows, 'No chats.'),
    rows.length >= PAGE_SIZE ? el('p', {class: 'muted'},
      `The ${PAGE_SIZE} most recently active are shown; search by id or name to find the others.`) : null];
}

function traceLink(traceId) {
  const template = state.session.traceUrl;
  if (template) {
    const url = template.split('{traceId}').join(enc(traceId));
    if (/^https?:\/\//i.test(url)) {
      return el('a', {href: url, target: '_blank', rel: 'noopener noreferrer'}, traceId);
    }
  }
  return el('code', {}, traceId);
}

function messageItem(message) {
  const calls = message.toolCalls || [];
  return el('li', {class: 'message', 'data-role': message.role, 'data-id': message.id, 'data-trace': message.traceId},
    el('p', {class: 'message-head'},
      el('span', {class: 'role'}, message.role), ' ', when(message.at),
      message.senderId ? [' ', el('span', {class: 'sender'}, message.senderId)] : null),
    message.text ? el('p', {class: 'message-text', 'data-text': true}, message.text) : null,
    calls.length ? el('ul', {class: 'calls'}, calls.map((call) =>
      el('li', {'data-call': call.id}, 'calls ', el('code', {}, `${call.name}(${json(call.arguments)})`)))) : null,
    message.toolCallId ? el('p', {class: 'meta'}, 'result of call ', el('code', {}, message.toolCallId)) : null,
    message.traceId ? el('p', {class: 'meta'}, 'trace ', traceLink(message.traceId)) : null);
}

function renderTranscript(answer, view) {
  const messages = answer.messages || [];
  // Newest first: the call still waiting (pending), each call that asked (requested), each decision and who made it.
  const approvals = (answer.approvals || []).map((a, i) => el('tr', {'data-id': i, 'data-state': a.state},
    el('td', {}, a.tool), el('td', {}, a.state), el('td', {}, when(a.at)), el('td', {}, orDash(a.by))));
  const chat = answer.chat || {};
  return [
    el('p', {class: 'meta'}, `${chat.channel || view.route.channel} · ${chat.name || chat.chatId || view.route.chatKey}`
      + ` · ${messages.length} messages`),
    el('ol', {class: 'transcript', 'aria-label': 'Messages'}, messages.map(messageItem)),
    emptyNote(messages, 'No messages.'),
    el('h2', {}, 'Approvals'),
    approvals.length ? table(`Approvals (${approvals.length})`, ['Tool', 'State', 'When', 'Decision'], approvals)
      : el('p', {class: 'muted'}, 'No approvals.'),
  ];
}

function focusButton(view, rowSelector, label) {
  const target = [...view.body.querySelectorAll(`${rowSelector} button`)].find((node) => node.textContent === label);
  if (target) {
    target.focus();
  }
}

function deadLetterRow(view, letter) {
  const {tenant, bot} = view.route;
  const path = `${botPath(view.route)}/dead-letters/${enc(letter.id)}`;
  const rowSelector = `tr[data-dead-letter="${CSS.escape(String(letter.id))}"]`;
  const redraw = () => replaceRow(view, rowSelector, deadLetterRow(view, letter));
  let actions;
  if (view.state.confirming === letter.id) {
    const confirm = button('Confirm discard', () => act(view, confirm, async () => {
      await api(path, {method: 'DELETE'});
      view.state.confirming = null;
      announce(`Dead letter ${letter.id} discarded.`);
      await load(view, false);
    }), {class: 'danger'});
    actions = [confirm, ' ', button('Cancel', () => {
      view.state.confirming = null;
      redraw();
      focusButton(view, rowSelector, 'Discard');
    })];
  } else {
    const replay = letter.replayedAt ? null : button('Replay', () => act(view, replay, async () => {
      await api(`${path}/replay`, {method: 'POST'});
      announce(`Dead letter ${letter.id} replayed.`);
      await load(view, false);
    }));
    actions = [replay, ' ', button('Discard', () => {
      view.state.confirming = letter.id;
      redraw();
      focusButton(view, rowSelector, 'Confirm discard');
    })];
  }
  const text = letter.textHidden ? el('em', {class: 'muted'}, 'hidden') : orDash(letter.text);
  return el('tr',
    {'data-id': letter.id, 'data-dead-letter': letter.id, 'data-replayed': letter.replayedAt ? 'true' : 'false'},
    el('td', {}, letter.id),
    el('td', {}, letter.kind),
    el('td', {}, letter.chatId ? chatLink(tenant, bot, letter.channel, letter.chatId, letter.chatId) : NO_VALUE),
    el('td', {'data-col': 'text', class: 'text'}, text),
    el('td', {class: 'text'}, orDash(letter.error)),
    el('td', {class: 'num'}, letter.attempts),
    el('td', {}, when(letter.createdAt)),
    el('td', {}, when(letter.replayedAt)),
    el('td', {class: 'actions'}, actions));
}

function renderDeadLetters(letters, view) {
  const rows = letters.map((letter) => deadLetterRow(view, letter));
  return [table(`Dead letters (${rows.length})`, ['ID', 'Kind', 'Chat', 'Text', 'Error', 'Attempts', 'Created',
    'Replayed', 'Actions'], rows), emptyNote(rows, 'No dead letters.')];
}

async function loadTasks(route, pageState) {
  const tasks = (await api(`${botPath(route)}/tasks`)).tasks || [];
  const runs = pageState.runsFor === undefined || pageState.runsFor === null ? null
    : (await api(`${botPath(route)}/tasks/${enc(pageState.runsFor)}/runs`)).runs || [];
  return {tasks, runs};
}

function renderTasks({tasks, runs}, view) {
  const {tenant, bot} = view.route;
  const open = view.state.runsFor;
  const rows = tasks.map((task) => {
    const toggle = button('Runs', async () => {
      view.state.runsFor = open === task.id ? null : task.id;
      if (await load(view, false)) {
        announce(view.state.runsFor === null ? 'Runs hidden.' : `${view.data.runs.length} runs of task ${task.id}.`);
      }
    }, {'aria-expanded': open === task.id ? 'true' : 'false', 'aria-controls': open === task.id ? 'task-runs' : null});
    return el('tr', {'data-id': task.id, 'data-task': task.id, 'data-status': task.status},
      el('td', {}, task.id),
      el('td', {}, task.chatId ? chatLink(tenant, bot, task.channel, task.chatId, task.chatId) : NO_VALUE),
      el('td', {}, task.kind),
      el('td', {}, [task.scheduleType, task.scheduleValue].filter(Boolean).join(' ')),
      el('td', {}, task.status),
      el('td', {}, when(task.nextRunAt)),
      el('td', {class: 'actions'}, toggle));
  });
  const runRows = (runs || []).map((run) => el('tr', {'data-id': run.id, 'data-run': run.id, 'data-status': run.status},
    el('td', {}, when(run.startedAt || run.dueAt)),
    el('td', {}, run.status),
    el('td', {class: 'num'}, run.durationMs === null || run.durationMs === undefined ? NO_VALUE : `${run.durationMs} ms`),
    el('td', {class: 'text'}, run.error ? el('span', {class: 'error-text'}, run.error) : orDash(run.resultPreview))));
  return [
    table(`Tasks (${rows.length})`, ['ID', 'Chat', 'Kind', 'Schedule', 'Status', 'Next run', 'Actions'], rows),
    emptyNote(rows, 'No tasks.'),
    runs ? el('section', {id: 'task-runs', class: 'runs', 'aria-labelledby': 'task-runs-title'},
      el('h2', {id: 'task-runs-title'}, `Runs of task ${open}`),
      table(`Runs (${runRows.length})`, ['Started', 'Status', 'Duration', 'Result or error'], runRows),
      emptyNote(runRows, 'No runs yet.')) : null,
  ];
}

function renderSandboxRuns(runs, view) {
  const {tenant, bot} = view.route;
  const rows = runs.map((run) => el('tr', {'data-id': run.id, 'data-outcome': run.outcome},
    el('td', {}, when(run.at)),
    el('td', {}, run.tool),
    el('td', {}, run.chat ? chatLink(tenant, bot, run.chat.channel, run.chat.chatId, run.chat.chatId) : NO_VALUE),
    el('td', {}, run.outcome, run.reason ? el('span', {class: 'muted'}, ` (${run.reason})`) : null),
    el('td', {class: 'num'}, orDash(run.durationMs)),
    el('td', {class: 'text'}, run.args === null || run.args === undefined ? NO_VALUE : el('code', {}, json(run.args)))));
  return [table(`Sandbox runs (${rows.length})`, ['At', 'Tool', 'Chat', 'Outcome', 'Duration (ms)', 'Arguments'], rows), emptyNote(rows, 'No sandbox runs.')];
}

function byIdDescending(a, b) {
  const x = Number(a.id);
  const y = Number(b.id);
  return Number.isNaN(x) || Number.isNaN(y) ? String(b.id).localeCompare(String(a.id)) : y - x;
}

// The first load and live refreshes fetch the newest page and merge it with what is shown; "Load more" asks for
// the page before the smallest id shown.
async function loadAudit(route, pageState) {
  const params = new URLSearchParams({limit: PAGE_SIZE});
  const more = pageState.loadingMore && pageState.events && pageState.events.length;
  pageState.loadingMore = false;
  if (more) {
    params.set('before', [...pageState.events].sort(byIdDescending).at(-1).id);
  }
  const events = (await api(`${tenantPath(route)}/audit?${params}`)).events || [];
  const merged = new Map((pageState.events || []).map((event) => [String(event.id), event]));
  for (const event of events) {
    merged.set(String(event.id), event);
  }
  if (more || pageState.events === undefined) {
    pageState.more = events.length >= PAGE_SIZE;
  }
  pageState.events = [...merged.values()].sort(byIdDescending);
  return pageState.events;
}

function actorName(actor) {
  if (!actor) {
    return NO_VALUE;
  }
  return actor.operator ? 'operator' : actor.keyName || actor.keyId || NO_VALUE;
}

function renderAudit(events, view) {
  const rows = events.map((event) => el('tr', {'data-id': event.id, 'data-type': event.type, 'data-outcome': event.outcome},
    el('td', {}, when(event.at)),
    el('td', {}, event.type),
    el('td', {}, orDash(event.outcome)),
    el('td', {}, orDash(event.botId)),
    el('td', {}, orDash(event.tool)),
    el('td', {}, event.chat && event.chat.chatId ? `${event.chat.channel}/${event.chat.chatId}` : NO_VALUE),
    el('td', {}, actorName(event.actor)),
    el('td', {class: 'text'}, orDash(event.reason))));
  const loadMore = view.state.more ? button('Load more', () => act(view, loadMore, async () => {
    const before = events.length;
    view.state.loadingMore = true;
    if (await load(view, false)) {
      announce(`${view.data.length - before} more events loaded.`);
    }
  })) : null;
  return [table(`Audit events (${rows.length})`, ['At', 'Type', 'Outcome', 'Bot', 'Tool', 'Chat', 'Actor', 'Reason'],
    rows), emptyNote(rows, 'No audit events.'), loadMore];
}

const count = (noun) => (data) => `${data.length} ${noun}${data.length === 1 ? '' : 's'} loaded.`;
const list = (field, path) => async (route) => (await api(path(route)))[field] || [];
// Every page of a list the API pages with nextCursor (tenants, bots), up to MAX_LISTED items.
const MAX_LISTED = 2000;
const every = (field, path) => async (route) => {
  const items = [];
  let after = null;
  do {
    const page = await api(path(route) + (after ? `?after=${enc(after)}` : ''));
    items.push(...(page[field] || []));
    after = page.nextCursor;
  } while (after && items.length < MAX_LISTED);
  return items;
};

// One entry per page: its title, how to fetch its data, how to paint it, what to announce once loaded.
// live: fetched again on `tenant` news; frame: built once per visit, above what is repainted.
const PAGES = {
  cluster: {
    title: () => 'Cluster', render: renderCluster,
    // The stream keeps the latest CLUSTER; without a live stream, ask.
    load: async () => (state.live && state.cluster) || (state.cluster = await api('/cluster')),
    loaded: (cluster) => `Cluster: ${(cluster.members || []).length} members, ${cluster.partitionCount} partitions.`,
  },
  tenants: {title: () => 'Tenants', load: every('tenants', () => '/tenants'), render: renderTenants, loaded: count('tenant')},
  bots: {
    title: (route) => `Bots of ${route.tenant}`, render: renderBots, loaded: count('bot'),
    load: every('bots', (route) => `${tenantPath(route)}/bots`),
  },
  chats: {
    title: (route) => `Chats of ${route.bot}`, live: true, frame: chatSearch, render: renderChats, loaded: count('chat'),
    load: async (route, pageState) => (await api(`${botPath(route)}/chats?${new URLSearchParams(
      {q: pageState.q || '', limit: PAGE_SIZE})}`)).chats || [],
  },
  transcript: {
    title: (route) => `Chat ${route.chatKey}`, live: true, render: renderTranscript,
    load: (route) => api(`${botPath(route)}/chats/${enc(route.channel)}/${enc(route.chatKey)}`),
    loaded: (answer) => `${(answer.messages || []).length} messages loaded.`,
    // Content the operator may not see: said so, and not asked for again on every change.
    failed: (view, error) => {
      if (error.status !== 403 || error.code !== 'content_hidden') {
        return false;
      }
      view.state.hidden = true;
      view.body.replaceChildren(el('p', {class: 'notice', 'data-content-hidden': true}, error.message));
      view.section.setAttribute('data-state', 'ready');
      announce(error.message);
      return true;
    },
  },
  'dead-letters': {
    title: (route) => `Dead letters of ${route.bot}`, live: true, render: renderDeadLetters, loaded: count('dead letter'),
    load: list('deadLetters', (route) => `${botPath(route)}/dead-letters`),
  },
  tasks: {
    title: (route) => `Tasks of ${route.bot}`, live: true, load: loadTasks, render: renderTasks,
    loaded: (data) => count('task')(data.tasks),
  },
  'sandbox-runs': {
    title: (route) => `Sandbox runs of ${route.bot}`, live: true, render: renderSandboxRuns, loaded: count('sandbox run'),
    load: list('runs', (route) => `${botPath(route)}/sandbox-runs`),
  },
  audit: {title: (route) => `Audit of ${route.tenant}`, live: true, load: loadAudit, render: renderAudit,
    loaded: count('audit event')},
};

// ---- start ----

$('#sign-out').addEventListener('click', () => {
  signOut();
  announce('Signed out.');
});
window.addEventListener('hashchange', show);

(async function boot() {
  const key = sessionStorage.getItem(KEY_STORE);
  if (!key) {
    showLogin();
    return;
  }
  try {
    await signIn(key);
  } catch (error) {
    sessionStorage.removeItem(KEY_STORE);
    showLogin(error.message);
  }
})();
