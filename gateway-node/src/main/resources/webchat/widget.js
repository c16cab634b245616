/*
 * Clawfleet web chat widget. One script tag on the site's pages:
 *
 *   <script src="https://<gateway>/webchat/v1/widget.js" data-key="pk_..." async></script>
 *
 * Optional attributes: data-token-url (the site's own endpoint answering {"token": "..."}, an end-user token it signed
 * with the account's secret; without it the visitor is anonymous, if the account allows that), data-title,
 * data-placeholder, data-open="true" (start opened). window.ClawfleetChat has open(), close() and send(text).
 *
 * Protocol (docs/CHANNELS.md, "Web chat"): a WebSocket to /webchat/v1/ws; hello with the token and the cursors of what
 * this page has seen; every message carries an id of its own and is kept (localStorage) until the gateway acks it, so a
 * drop, a reload or a gateway's death loses nothing and sends nothing twice. Text is shown as text, never as HTML.
 */
(function () {
  'use strict';
  var script = document.currentScript;
  if (!script || window.ClawfleetChat) {
    return;
  }
  var key = script.getAttribute('data-key');
  if (!key) {
    console.error('clawfleet web chat: the script tag needs data-key="pk_..."');
    return;
  }
  var base = new URL(script.src, location.href);
  var httpBase = base.origin;
  var wsBase = httpBase.replace(/^http/, 'ws');
  var tokenUrl = script.getAttribute('data-token-url');
  var title = script.getAttribute('data-title') || 'Chat';
  var placeholder = script.getAttribute('data-placeholder') || 'Write a message…';
  var store = 'clawfleet.webchat.' + key + '.';

  var state = {
    socket: null, ready: false, after: 0, afterUser: 0, backoff: 500, tokenRetried: false,
    pending: load('pending', []), // [{id, text}] not yet acked, oldest first
    replies: {} // replyTo -> bubble being streamed
  };

  function load(name, fallback) {
    try {
      var value = localStorage.getItem(store + name);
      return value === null ? fallback : JSON.parse(value);
    } catch (e) {
      return fallback;
    }
  }

  function save(name, value) {
    try {
      if (value === null) {
        localStorage.removeItem(store + name);
      } else {
        localStorage.setItem(store + name, JSON.stringify(value));
      }
    } catch (e) { /* private mode: the chat works for this page only */ }
  }

  // ---- the view, in a shadow root so that the site's styles and ours do not meet ----
  var host = document.createElement('div');
  host.setAttribute('data-clawfleet-chat', '');
  var root = host.attachShadow({mode: 'open'});
  root.innerHTML =
    '<style>' +
    ':host{all:initial}' +
    '.launcher{position:fixed;right:20px;bottom:20px;width:56px;height:56px;border-radius:28px;border:0;background:#1f6feb;' +
    'color:#fff;font:600 22px system-ui,sans-serif;cursor:pointer;box-shadow:0 4px 12px rgba(0,0,0,.25);z-index:2147483646}' +
    '.panel{position:fixed;right:20px;bottom:88px;width:360px;max-width:calc(100vw - 40px);height:520px;' +
    'max-height:calc(100vh - 120px);display:none;flex-direction:column;background:#fff;border-radius:12px;' +
    'box-shadow:0 8px 28px rgba(0,0,0,.25);font:14px/1.4 system-ui,sans-serif;color:#1b1f24;z-index:2147483647;overflow:hidden}' +
    '.panel.open{display:flex}' +
    '.head{padding:12px 16px;background:#1f6feb;color:#fff;font-weight:600;display:flex;justify-content:space-between}' +
    '.status{font-weight:400;font-size:12px;opacity:.85}' +
    '.log{flex:1;overflow-y:auto;padding:12px;display:flex;flex-direction:column;gap:8px;background:#f6f8fa}' +
    '.msg{max-width:80%;padding:8px 12px;border-radius:12px;white-space:pre-wrap;word-wrap:break-word}' +
    '.msg[data-role=user]{align-self:flex-end;background:#1f6feb;color:#fff}' +
    '.msg[data-role=assistant]{align-self:flex-start;background:#fff;border:1px solid #d0d7de}' +
    '.msg[data-pending=true]{opacity:.6}' +
    '.form{display:flex;border-top:1px solid #d0d7de}' +
    '.form textarea{flex:1;border:0;padding:10px;font:inherit;resize:none;outline:none;height:44px}' +
    '.form button{border:0;background:none;color:#1f6feb;font-weight:600;padding:0 14px;cursor:pointer}' +
    '</style>' +
    '<button class="launcher" part="launcher" aria-label="Open the chat">💬</button>' +
    '<div class="panel" role="dialog" aria-label="">' +
    '<div class="head"><span class="title"></span><span class="status"></span></div>' +
    '<div class="log" aria-live="polite"></div>' +
    '<form class="form"><textarea rows="1"></textarea><button type="submit">Send</button></form>' +
    '</div>';
  var launcher = root.querySelector('.launcher');
  var panel = root.querySelector('.panel');
  var log = root.querySelector('.log');
  var status = root.querySelector('.status');
  var input = root.querySelector('textarea');
  root.querySelector('.title').textContent = title;
  panel.setAttribute('aria-label', title);
  input.setAttribute('placeholder', placeholder);

  function setStatus(text) {
    status.textContent = text;
    host.setAttribute('data-status', text || 'connected');
  }

  function bubble(role, text, attributes) {
    var el = document.createElement('div');
    el.className = 'msg';
    el.setAttribute('data-role', role);
    el.textContent = text;
    for (var name in attributes) {
      if (attributes[name] !== undefined && attributes[name] !== null) {
        el.setAttribute(name, String(attributes[name]));
      }
    }
    log.appendChild(el);
    log.scrollTop = log.scrollHeight;
    return el;
  }

  function find(selector) {
    return log.querySelector(selector);
  }

  function cssId(id) {
    return String(id).replace(/[^A-Za-z0-9_-]/g, '');
  }

  function showUser(id, text, seq, pending) {
    var el = id ? find('.msg[data-role=user][data-id="' + cssId(id) + '"]') : null;
    if (!el && text === null) {
      return;
    }
    if (!el) {
      el = bubble('user', text, {'data-id': id});
    }
    el.setAttribute('data-pending', pending ? 'true' : 'false');
    if (seq) {
      el.setAttribute('data-seq', seq);
    }
  }

  function showReply(message) {
    if (find('.msg[data-role=assistant][data-seq="' + message.seq + '"]')) {
      return;
    }
    var streaming = message.replyTo ? state.replies[message.replyTo] : null;
    if (streaming) {
      // The reply as committed is the truth: it replaces what the streamed pieces showed.
      delete state.replies[message.replyTo];
      streaming.textContent = message.text;
      streaming.setAttribute('data-seq', message.seq);
      streaming.setAttribute('data-streaming', 'false');
    } else {
      bubble('assistant', message.text, {'data-seq': message.seq, 'data-reply-to': message.replyTo});
    }
  }

  function showDelta(delta) {
    var el = state.replies[delta.replyTo];
    if (!el) {
      el = state.replies[delta.replyTo] = bubble('assistant', '', {'data-reply-to': delta.replyTo, 'data-streaming': 'true',
        'data-deltas': 0});
    }
    el.textContent += delta.text;
    el.setAttribute('data-deltas', Number(el.getAttribute('data-deltas')) + 1);
    log.scrollTop = log.scrollHeight;
  }

  // ---- the token: the site's own, or an anonymous one from the gateway ----
  function token() {
    var saved = load('token', null);
    if (saved && saved.expiresAt > Date.now() + 60000) {
      return Promise.resolve(saved.token);
    }
    var request = tokenUrl
      ? fetch(tokenUrl, {credentials: 'include'})
      : fetch(httpBase + '/webchat/v1/sessions', {method: 'POST', headers: {'content-type': 'application/json'},
          body: JSON.stringify({key: key})});
    return request.then(function (response) {
      if (!response.ok) {
        throw new Error('no token (' + response.status + ')');
      }
      return response.json();
    }).then(function (body) {
      var expiresAt = body.expiresAt ? Date.parse(body.expiresAt) : expiryOf(body.token);
      save('token', {token: body.token, expiresAt: expiresAt});
      return body.token;
    });
  }

  function expiryOf(jwt) {
    try {
      var claims = JSON.parse(atob(jwt.split('.')[1].replace(/-/g, '+').replace(/_/g, '/')));
      return claims.exp * 1000;
    } catch (e) {
      return Date.now() + 300000;
    }
  }

  // ---- the connection ----
  function connect() {
    setStatus('connecting…');
    token().then(function (tok) {
      var socket = new WebSocket(wsBase + '/webchat/v1/ws?key=' + encodeURIComponent(key));
      state.socket = socket;
      socket.onopen = function () {
        var hello = {type: 'hello', token: tok};
        if (state.after || state.afterUser) {
          hello.after = state.after;
          hello.afterUser = state.afterUser;
        }
        socket.send(JSON.stringify(hello));
      };
      socket.onmessage = function (event) {
        receive(JSON.parse(event.data));
      };
      socket.onclose = function (event) {
        state.socket = null;
        state.ready = false;
        if (event.code === 4401 && !state.tokenRetried) {
          // The token expired or was revoked: one more try with a new one.
          state.tokenRetried = true;
          save('token', null);
          setTimeout(connect, 0);
          return;
        }
        retry();
      };
    }).catch(function (e) {
      setStatus('offline');
      console.warn('clawfleet web chat:', e.message);
      retry();
    });
  }

  function retry() {
    setStatus('reconnecting…');
    var wait = state.backoff * (0.75 + Math.random() / 2);
    state.backoff = Math.min(state.backoff * 2, 10000);
    setTimeout(connect, wait);
  }

  function receive(frame) {
    switch (frame.type) {
      case 'ready':
        state.ready = true;
        state.backoff = 500;
        state.tokenRetried = false;
        setStatus('');
        break;
      case 'history':
        frame.messages.forEach(function (message) {
          if (message.role === 'user') {
            showUser(message.id, message.text, message.seq, false);
            state.afterUser = Math.max(state.afterUser, message.seq);
          } else {
            showReply(message);
            state.after = Math.max(state.after, message.seq);
          }
        });
        // What this page sent and never saw acked goes again: the gateway takes it once, by its id.
        state.pending.forEach(function (message) {
          showUser(message.id, message.text, null, true);
          transmit(message);
        });
        break;
      case 'ack':
        state.pending = state.pending.filter(function (message) {
          return message.id !== frame.id;
        });
        save('pending', state.pending);
        showUser(frame.id, null, frame.seq, false);
        state.afterUser = Math.max(state.afterUser, frame.seq);
        break;
      case 'delta':
        showDelta(frame);
        break;
      case 'message':
        showReply(frame);
        state.after = Math.max(state.after, frame.seq);
        break;
      case 'error':
        if (frame.id && frame.retryAfter) {
          setTimeout(function () {
            state.pending.filter(function (m) { return m.id === frame.id; }).forEach(transmit);
          }, frame.retryAfter * 1000);
        } else if (frame.id) {
          // Refused for good (too long, malformed): it will not be taken, so it is not kept either.
          state.pending = state.pending.filter(function (m) { return m.id !== frame.id; });
          save('pending', state.pending);
        }
        setStatus(frame.message);
        break;
    }
  }

  function transmit(message) {
    if (state.socket && state.ready) {
      state.socket.send(JSON.stringify({type: 'message', id: message.id, text: message.text}));
    }
  }

  function newId() {
    var bytes = new Uint8Array(12);
    crypto.getRandomValues(bytes);
    return Array.prototype.map.call(bytes, function (b) { return ('0' + b.toString(16)).slice(-2); }).join('');
  }

  function send(text) {
    text = String(text || '').trim();
    if (!text) {
      return;
    }
    var message = {id: newId(), text: text};
    state.pending.push(message);
    save('pending', state.pending);
    showUser(message.id, text, null, true);
    transmit(message);
  }

  function open() {
    panel.classList.add('open');
    input.focus();
  }

  function close() {
    panel.classList.remove('open');
  }

  launcher.addEventListener('click', function () {
    panel.classList.contains('open') ? close() : open();
  });
  root.querySelector('form').addEventListener('submit', function (event) {
    event.preventDefault();
    send(input.value);
    input.value = '';
  });
  input.addEventListener('keydown', function (event) {
    if (event.key === 'Enter' && !event.shiftKey) {
      event.preventDefault();
      send(input.value);
      input.value = '';
    }
  });

  function mount() {
    document.body.appendChild(host);
    if (script.getAttribute('data-open') === 'true') {
      open();
    }
    connect();
  }

  window.ClawfleetChat = {open: open, close: close, send: send};
  if (document.body) {
    mount();
  } else {
    document.addEventListener('DOMContentLoaded', mount);
  }
})();
