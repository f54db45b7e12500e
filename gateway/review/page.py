"""The reviewer page: plain HTML, CSS and a little JS, served at / of the admin listener.

Kept inline so the page ships with the package as code, with no build step
and no package data to forget. The page holds no data itself: it asks the
admin API with the token the reviewer typed in (kept in sessionStorage, or
taken once from ``#token=...`` in the URL), and polls the pending queue every
second. Polling reads the shared store, so a review created by another
replica shows up as surely as one created here.

Everything from the API is attacker-influenced (a review's reason and excerpt
quote the request) and is rendered with ``textContent`` only; the Content
Security Policy allows no inline script and no other origin, as a second line.
"""

from __future__ import annotations

from aiohttp import web

_SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}

HTML = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>reefgate reviews</title>
<link rel="stylesheet" href="/review.css">
<script src="/review.js" defer></script>
</head>
<body>
<header>
  <h1>reefgate reviews</h1>
  <span id="live" role="status"></span>
  <button type="button" id="signout" hidden>Forget token</button>
</header>
<form id="login" hidden>
  <label>Reviewer or admin token
    <input id="token" type="password" autocomplete="off" required></label>
  <button type="submit">Open</button>
  <p id="login-error" role="alert"></p>
</form>
<main id="main" hidden>
  <section id="queue-pane" aria-labelledby="queue-title">
    <h2 id="queue-title">Pending <span id="count"></span></h2>
    <p id="empty">Nothing is waiting for review.</p>
    <ul id="queue"></ul>
  </section>
  <section id="detail" hidden aria-labelledby="d-title">
    <h2 id="d-title">Review <code id="d-id"></code></h2>
    <dl>
      <dt>Status</dt><dd id="d-status"></dd>
      <dt>Team</dt><dd id="d-team"></dd>
      <dt>Category</dt><dd id="d-category"></dd>
      <dt>Reason</dt><dd id="d-reason"></dd>
      <dt>Direction</dt><dd id="d-direction"></dd>
      <dt>Source</dt><dd id="d-source"></dd>
      <dt>Destination</dt><dd id="d-destination"></dd>
      <dt>Created</dt><dd id="d-created"></dd>
      <dt>Digest</dt><dd><code id="d-digest"></code></dd>
      <dt>Decided by</dt><dd id="d-decided"></dd>
      <dt>Note</dt><dd id="d-note"></dd>
    </dl>
    <h3>Excerpt <small>(secrets replaced)</small></h3>
    <pre id="d-excerpt"></pre>
    <h3>Findings</h3>
    <p id="d-nofindings">None.</p>
    <table id="d-findings-table">
      <thead><tr><th>Kind</th><th>Fingerprint</th><th>Where</th></tr></thead>
      <tbody id="d-findings"></tbody>
    </table>
    <div id="decide">
      <label>Note (optional)
        <textarea id="note" maxlength="2000" rows="2"></textarea></label>
      <button type="button" id="approve">Approve</button>
      <button type="button" id="deny">Deny</button>
    </div>
    <p id="result" role="status"></p>
  </section>
</main>
</body>
</html>
"""

CSS = """
:root { font-family: system-ui, sans-serif; color: #1b1f24; background: #f6f7f9; }
body { margin: 0; }
header { display: flex; gap: 1rem; align-items: baseline; padding: .6rem 1rem;
  background: #0f3d56; color: #fff; }
header h1 { font-size: 1.1rem; margin: 0; }
#live { font-size: .8rem; opacity: .8; flex: 1; }
form#login { padding: 2rem 1rem; display: flex; gap: .5rem; align-items: end; flex-wrap: wrap; }
#login-error { color: #a40000; width: 100%; }
main { display: grid; grid-template-columns: minmax(16rem, 28rem) 1fr; gap: 1rem; padding: 1rem; }
ul#queue { list-style: none; padding: 0; margin: 0; }
ul#queue button { display: block; width: 100%; text-align: left; padding: .5rem;
  margin-bottom: .3rem; border: 1px solid #c9d1d9; border-radius: 4px; background: #fff;
  cursor: pointer; font: inherit; }
ul#queue button[aria-current="true"] { border-color: #0f3d56; box-shadow: 0 0 0 2px #0f3d5633; }
.item-category { font-weight: 600; }
.item-meta { display: block; font-size: .8rem; color: #57606a; overflow-wrap: anywhere; }
section#detail { background: #fff; border: 1px solid #c9d1d9; border-radius: 4px;
  padding: 0 1rem 1rem; min-width: 0; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; }
dt { font-weight: 600; }
dd { margin: 0; overflow-wrap: anywhere; }
pre#d-excerpt { white-space: pre-wrap; overflow-wrap: anywhere; background: #f6f8fa;
  padding: .5rem; border-radius: 4px; max-height: 20rem; overflow: auto; }
table { border-collapse: collapse; }
th, td { text-align: left; padding: .2rem .6rem; border-bottom: 1px solid #d8dee4; }
td { font-family: ui-monospace, monospace; font-size: .85rem; overflow-wrap: anywhere; }
#decide { display: flex; gap: .5rem; align-items: end; flex-wrap: wrap; margin-top: 1rem; }
#decide label { flex: 1; min-width: 12rem; }
textarea { width: 100%; font: inherit; }
button#approve { background: #1a7f37; color: #fff; border: 0; padding: .4rem 1rem; }
button#deny { background: #cf222e; color: #fff; border: 0; padding: .4rem 1rem; }
button:disabled { opacity: .5; cursor: default; }
#result { font-weight: 600; }
@media (max-width: 48rem) { main { grid-template-columns: 1fr; } }
"""

JS = r"""
"use strict";
(() => {
  const KEY = "reefgate.reviewToken";
  const POLL_MS = 1000;
  const $ = (id) => document.getElementById(id);
  let token = null;
  let selected = null;
  let pollTimer = null;
  let generation = 0;
  let queueShape = null;

  class SignedOut extends Error {}

  function takeTokenFromFragment() {
    const params = new URLSearchParams(location.hash.slice(1));
    const given = params.get("token");
    if (given) {
      sessionStorage.setItem(KEY, given);
      // Out of the address bar and the history: the token is a credential.
      history.replaceState(null, "", location.pathname + location.search);
    }
  }

  function errorText(data, status) {
    const err = data && data.error;
    return (err && typeof err.message === "string") ? err.message : "HTTP " + status;
  }

  async function api(method, path, body) {
    const init = { method, cache: "no-store", headers: { "Authorization": "Bearer " + token } };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const resp = await fetch(path, init);
    let data = null;
    try { data = await resp.json(); } catch (_) { data = null; }
    if (resp.status === 401) {
      signOut("That token was not accepted.");
      throw new SignedOut();
    }
    return { status: resp.status, data };
  }

  function when(seconds) {
    return (typeof seconds === "number") ? new Date(seconds * 1000).toLocaleString() : "";
  }

  function text(tag, className, value) {
    const el = document.createElement(tag);
    if (className) el.className = className;
    el.textContent = value;
    return el;
  }

  function renderQueue(reviews) {
    // Rebuilt only when the queue changed: a button replaced under the
    // pointer every second would swallow clicks.
    const shape = JSON.stringify(reviews.map((r) => r.id));
    if (shape === queueShape) return;
    queueShape = shape;
    const items = reviews.map((r) => {
      const button = document.createElement("button");
      button.type = "button";
      button.dataset.id = r.id;
      button.setAttribute("aria-current", String(r.id === selected));
      button.append(
        text("span", "item-category", r.category),
        document.createTextNode(" "),
        text("span", "item-team", r.team),
        text("span", "item-meta", r.source + " \u2192 " + r.destination),
        text("span", "item-meta", r.reason),
        text("span", "item-meta", when(r.created)),
      );
      button.addEventListener("click", guard(() => select(r.id)));
      const li = document.createElement("li");
      li.append(button);
      return li;
    });
    $("queue").replaceChildren(...items);
    $("count").textContent = "(" + reviews.length + ")";
    $("empty").hidden = reviews.length > 0;
    document.title = (reviews.length ? "(" + reviews.length + ") " : "") + "reefgate reviews";
  }

  function renderDetail(r) {
    $("detail").hidden = false;
    $("d-id").textContent = r.id;
    $("d-status").textContent = r.status;
    $("d-team").textContent = r.team;
    $("d-category").textContent = r.category;
    $("d-reason").textContent = r.reason;
    $("d-direction").textContent = r.direction;
    $("d-source").textContent = r.source;
    $("d-destination").textContent = r.destination;
    $("d-created").textContent = when(r.created);
    $("d-digest").textContent = r.digest;
    $("d-decided").textContent = r.decided_by ? r.decided_by + ", " + when(r.decided_at) : "";
    $("d-note").textContent = r.note || "";
    $("d-excerpt").textContent = r.excerpt;
    const rows = (r.findings || []).map((f) => {
      const tr = document.createElement("tr");
      tr.append(text("td", "", f.kind), text("td", "", f.fingerprint), text("td", "", f.where));
      return tr;
    });
    $("d-findings").replaceChildren(...rows);
    $("d-findings-table").hidden = rows.length === 0;
    $("d-nofindings").hidden = rows.length > 0;
    const open = r.status === "pending";
    $("approve").disabled = !open;
    $("deny").disabled = !open;
    $("note").disabled = !open;
  }

  async function select(id) {
    selected = id;
    $("result").textContent = "";
    $("note").value = "";
    for (const b of $("queue").querySelectorAll("button")) {
      b.setAttribute("aria-current", String(b.dataset.id === id));
    }
    await showSelected();
  }

  async function showSelected() {
    const id = selected;
    const { status, data } = await api("GET", "/admin/reviews/" + encodeURIComponent(id));
    if (id !== selected) return;
    if (status === 200) renderDetail(data);
    else $("result").textContent = errorText(data, status);
  }

  async function decide(action) {
    const id = selected;
    if (!id) return;
    $("approve").disabled = true;
    $("deny").disabled = true;
    const note = $("note").value.trim();
    const body = note ? { note } : {};
    const { status, data } = await api(
      "POST", "/admin/reviews/" + encodeURIComponent(id) + "/" + action, body);
    if (status === 200) {
      renderDetail(data);
      $("result").textContent = data.status + " by " + data.decided_by;
    } else {
      $("result").textContent = errorText(data, status);
      await showSelected();
    }
    await refresh();
  }

  async function refresh() {
    const { status, data } = await api("GET", "/admin/reviews?status=pending");
    if (status !== 200) {
      $("live").textContent = "cannot load the queue: " + errorText(data, status);
      return;
    }
    renderQueue(data);
    // Decided elsewhere (another reviewer, the CLI, another replica): show it.
    if (selected && !$("approve").disabled && !data.some((r) => r.id === selected)) {
      await showSelected();
    }
    $("live").textContent = "live, updated " + new Date().toLocaleTimeString();
  }

  async function poll(mine) {
    if (mine !== generation) return;
    try {
      await refresh();
    } catch (err) {
      if (err instanceof SignedOut) return;
      $("live").textContent = "cannot reach the gateway; retrying";
    }
    if (mine === generation) pollTimer = setTimeout(() => poll(mine), POLL_MS);
  }

  function signIn(value) {
    token = value;
    sessionStorage.setItem(KEY, value);
    $("login").hidden = true;
    $("main").hidden = false;
    $("signout").hidden = false;
    generation += 1;
    poll(generation);
  }

  function signOut(message) {
    generation += 1;
    clearTimeout(pollTimer);
    queueShape = null;
    token = null;
    selected = null;
    sessionStorage.removeItem(KEY);
    $("main").hidden = true;
    $("detail").hidden = true;
    $("signout").hidden = true;
    $("login").hidden = false;
    $("login-error").textContent = message || "";
    $("live").textContent = "";
    $("token").value = "";
  }

  function guard(action) {
    return () => action().catch((err) => {
      if (!(err instanceof SignedOut)) $("result").textContent = "request failed: " + err.message;
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("login").addEventListener("submit", (event) => {
      event.preventDefault();
      const value = $("token").value.trim();
      if (value) signIn(value);
    });
    $("signout").addEventListener("click", () => signOut(""));
    $("approve").addEventListener("click", guard(() => decide("approve")));
    $("deny").addEventListener("click", guard(() => decide("deny")));
    takeTokenFromFragment();
    const stored = sessionStorage.getItem(KEY);
    if (stored) signIn(stored);
    else signOut("");
  });
})();
"""


def _serve(body: str, content_type: str) -> web.Response:
    return web.Response(
        text=body, content_type=content_type, charset="utf-8", headers=_SECURITY_HEADERS
    )


async def _html(request: web.Request) -> web.Response:
    return _serve(HTML, "text/html")


async def _css(request: web.Request) -> web.Response:
    return _serve(CSS, "text/css")


async def _js(request: web.Request) -> web.Response:
    return _serve(JS, "text/javascript")


async def _no_icon(request: web.Request) -> web.Response:
    return web.Response(status=204)


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/", _html)
    router.add_get("/review.css", _css)
    router.add_get("/review.js", _js)
    router.add_get("/favicon.ico", _no_icon)
