// The Gatehouse console (docs/console.md): sign in with oidc-client-ts (the
// code flow with PKCE, renewal by refresh token), one socket to the message
// gateway kept authenticated with AuthToken as the tokens renew, a quote
// board, the query service, orders after a step-up. Everything it shows of
// a refusal is what the service answered, with the reason the console can
// tell from the session's own rights.
"use strict";
(() => {
  const cfg = JSON.parse(document.body.dataset.config);
  const $ = (id) => document.getElementById(id);
  const el = (tag, text, cls) => {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  };
  const here = location.origin + cfg.base;
  const queryBase = cfg.query.startsWith("/") ? location.origin + cfg.query : cfg.query;

  const mgr = new oidc.UserManager({
    authority: cfg.issuer,
    client_id: cfg.clientId,
    redirect_uri: here + "callback",
    post_logout_redirect_uri: here,
    response_type: "code",
    scope: cfg.scopes,
    loadUserInfo: false,
    // Renewal by refresh token a minute before the access token expires
    // comes from addAccessTokenExpiring through renew(), the one path of
    // every renewal: one at a time, one way to fail. Each renewal is sent
    // to the open socket (onUserLoaded).
    automaticSilentRenew: false,
    // The user and the sign-in's state (its PKCE verifier, an order
    // waiting for a step-up) live in this tab only, and go with it.
    userStore: new oidc.WebStorageStateStore({ store: window.sessionStorage }),
    stateStore: new oidc.WebStorageStateStore({ store: window.sessionStorage }),
  });

  let user = null; // oidc-client-ts's User
  let claims = {}; // the access token's payload
  let signingOut = false;

  // --- status and events -------------------------------------------------

  function status(text, cls) {
    const s = $("status");
    s.textContent = text;
    s.className = cls || "";
  }

  function event(text, cls) {
    const log = $("event-log");
    const li = el("li", null, cls);
    li.append(el("time", new Date().toLocaleTimeString()), " " + text);
    log.prepend(li);
    while (log.children.length > 100) log.lastChild.remove();
  }

  // --- the session's rights ---------------------------------------------

  function decodeJWT(jwt) {
    try {
      const part = jwt.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
      const bin = atob(part + "===".slice((part.length + 3) % 4));
      return JSON.parse(new TextDecoder().decode(Uint8Array.from(bin, (c) => c.charCodeAt(0))));
    } catch (e) {
      return {};
    }
  }

  const scopes = () => (user && user.scope ? user.scope.split(" ") : []);
  const hasScope = (s) => scopes().includes(s);

  // entitlements are the token's market-data pairs (RFC 9396
  // authorization_details of type market_data), as VENUE:feed.
  function entitlements(c) {
    const out = [];
    for (const d of Array.isArray(c.authorization_details) ? c.authorization_details : []) {
      if (d && d.type === "market_data" && Array.isArray(d.feeds)) {
        for (const f of d.feeds) out.push(d.venue + ":" + f);
      }
    }
    return out.sort();
  }

  function showIdentity() {
    claims = decodeJWT(user.access_token);
    const p = user.profile || {};
    $("id-sub").textContent = claims.sub || p.sub || "";
    $("id-name").textContent = p.name || p.preferred_username || "";
    $("id-client").textContent = claims.client_id || claims.azp || cfg.clientId;
    $("id-scopes").textContent = scopes().join(" ");
    const ent = entitlements(claims);
    $("id-entitlements").textContent = ent.length ? ent.join(" ") : "none";
    const amr = Array.isArray(claims.amr) ? claims.amr.join(" ") : "";
    $("id-acr").textContent = (claims.acr || "") + (amr ? " (amr: " + amr + ")" : "");
    tick();
  }

  function tick() {
    if (!user) return;
    const left = user.expires_in;
    if (left === undefined) return;
    const s = Math.max(0, Math.floor(left));
    $("id-expires").textContent = s > 0 ? Math.floor(s / 60) + " min " + String(s % 60).padStart(2, "0") + " s" : "expired";
  }

  // --- the socket --------------------------------------------------------

  const sock = {
    ws: null,
    authed: false,
    txn: 0,
    authTxn: 0,
    reauths: 0,
    connections: 0,
    retry: 0, // failed or short connections in a row: the back-off's exponent
    timer: 0,
    stable: 0, // the timer that resets retry once a connection has held
    renewedFor: "", // the token a renewal was tried for after a refusal or lapse
    lapsed: false, // the gateway said the authority lapsed (an Identify push)
    rights: "",
    entitlements: null, // VENUE:feed as the gateway last listed them
  };

  function socketURL() {
    const base = cfg.socket.startsWith("/")
      ? (location.protocol === "https:" ? "wss://" : "ws://") + location.host + cfg.socket
      : cfg.socket;
    return base + (base.includes("?") ? "&" : "?") + "version=1.1";
  }

  function sockState(text) {
    $("sock-state").textContent = text;
  }

  function send(msg) {
    if (!sock.ws || sock.ws.readyState !== WebSocket.OPEN) return 0;
    msg.TransactionID = ++sock.txn;
    sock.ws.send(JSON.stringify(msg));
    return msg.TransactionID;
  }

  // A connection that authenticated and held this long resets the
  // back-off; one the gateway closes sooner (a refused or revoked token,
  // the audit refusing, a restart) counts as a failure.
  const STABLE_MS = 30000;

  function connect() {
    if (!user || sock.ws || signingOut) return;
    clearTimeout(sock.timer);
    const ws = new WebSocket(socketURL(), cfg.subprotocol);
    sock.ws = ws;
    sock.authed = false;
    sock.entitlements = null;
    sock.connections++;
    $("sock-connections").textContent = sock.connections;
    sockState("connecting");
    ws.onopen = () => {
      sockState("open, authenticating");
      sendAuth();
    };
    ws.onmessage = (ev) => {
      let m;
      try {
        m = JSON.parse(ev.data);
      } catch (e) {
        event("The socket sent a message that is not JSON.", "bad");
        return;
      }
      handle(m);
    };
    ws.onclose = (ev) => {
      if (sock.ws !== ws) return;
      sock.ws = null;
      sock.authed = false;
      clearTimeout(sock.stable);
      sockState("closed (" + ev.code + (ev.reason ? ": " + ev.reason : "") + ")");
      for (const row of rows.values()) if (row.state === "live" || row.state === "subscribing") setRowState(row, "waiting for the socket");
      if (!user || signingOut) return;
      const closed = "Socket closed with " + ev.code + (ev.reason ? " (" + ev.reason + ")" : "");
      // Exponential back-off from 1 s to 30 s, with jitter of ±50%, so that
      // the consoles a restart closes do not all come back at once.
      const wait = Math.min(30, 2 ** sock.retry++) * (0.5 + Math.random());
      event(closed + "; reconnecting in " + wait.toFixed(1) + " s.", "bad");
      sock.timer = setTimeout(connect, wait * 1000);
    };
  }

  // sendAuth authenticates the socket with the current access token: the
  // first time after it opens, and again after each renewal, on the same
  // connection (AuthToken on an authenticated socket).
  function sendAuth() {
    if (!user) return;
    sock.authTxn = send({ Controller: "Auth", Topic: "AuthToken", Action: "Publish", Data: { Provider: "Bearer", AccessToken: user.access_token } });
  }

  // showRights shows the session's rights as the gateway said them (an
  // Identify), says when they changed (the expiry aside, which each
  // renewal moves), and subscribes again what they now allow.
  function showRights(data) {
    const before = currentEntitlements();
    if (Array.isArray(data.Entitlements)) sock.entitlements = data.Entitlements.filter((e) => typeof e === "string").sort();
    const parts = [];
    if (Array.isArray(data.Scope)) parts.push(data.Scope.join(" ") || "no scope");
    if (Array.isArray(data.Entitlements)) parts.push("entitled to " + (sock.entitlements.join(" ") || "no venue"));
    const text = parts.join("; ");
    if (sock.rights && text !== sock.rights) event("The socket's rights changed: " + text + ".");
    sock.rights = text;
    $("sock-rights").textContent = text + (data.ExpiryDate ? "; until " + data.ExpiryDate : "");
    // Subscribed again: what was refused for want of a pair the session
    // did not hold and now holds (not what the gateway refused for a
    // reason the console cannot see, which a renewal would not change).
    const gained = (sym, feed) => holds(sym, feed) && !before.includes(venueOf(sym) + ":" + feed);
    for (const row of rows.values()) {
      if (!row.authority) continue;
      if (gained(row.sym, "quotes")) subscribe(row);
      else setRowState(row, refusal(row.sym, "quotes").replace(/^refused/, row.authority), "bad");
    }
    for (const sym of depthWanted) {
      const box = depthBox(sym);
      if (box.dataset.refused && gained(sym, "depth")) subscribeDepth(sym);
    }
  }

  // refused is the gateway refusing the current token in AuthToken. One
  // renewal is tried for a token refused; a new token refused as well
  // (the gateway's verifier failing, a key it has not fetched yet, too
  // many sessions) is not renewed again at once: the socket closes and
  // the reconnect's back-off paces what follows, each attempt with the
  // token of the moment.
  function refused() {
    const token = user ? user.access_token : "";
    if (token && sock.renewedFor !== token) {
      sock.renewedFor = token;
      renew("the gateway refused it");
      return;
    }
    if (sock.ws) sock.ws.close(1000, "token refused");
  }

  // lapsed is the socket's authority gone (an Identify push that is not a
  // success: a revocation, or an expiry): what flows stops until a fresh
  // token, which a renewal is tried for, once per token.
  function lapsed(result) {
    sock.lapsed = true;
    sockState("authority lapsed (" + result + "): waiting for a fresh token");
    for (const row of rows.values()) if (row.state === "live") setRowState(row, "paused: the session's authority lapsed", "bad");
    event("The gateway says the session's authority lapsed (" + result + "); renewing.", "bad");
    const token = user ? user.access_token : "";
    if (token && sock.renewedFor !== token) {
      sock.renewedFor = token;
      renew("the session's authority lapsed");
    }
  }

  function handle(m) {
    if (m.Controller === "Auth") return handleAuth(m);
    if (m.Controller === "Market") return handleMarket(m);
    if (m.Action === "Error") event("The gateway answered " + (m.Controller || "") + "/" + (m.Topic || "") + " with Error " + JSON.stringify(m.Data) + ".", "bad");
  }

  function handleAuth(m) {
    const d = m.Data || {};
    if (m.Action === "Error") {
      event("Auth/" + m.Topic + " refused: " + JSON.stringify(d) + ".", "bad");
      return;
    }
    if (m.TransactionID === sock.authTxn && (m.Topic === "Identify" || m.Topic === "AuthToken")) {
      if (d.Result !== "Success") {
        sockState("authentication refused (" + d.Result + ")");
        event("The gateway refused the token (" + d.Result + ").", "bad");
        refused();
        return;
      }
      sock.lapsed = false;
      if (!sock.authed) {
        sock.authed = true;
        clearTimeout(sock.stable);
        sock.stable = setTimeout(() => { sock.retry = 0; }, STABLE_MS);
        sockState("authenticated");
        event("Socket authenticated (connection " + sock.connections + ").", "good");
        send({ Controller: "Auth", Topic: "Identify", Action: "Sub" });
        for (const row of rows.values()) subscribe(row);
        for (const sym of depthWanted) subscribeDepth(sym);
      } else {
        sock.reauths++;
        $("sock-reauths").textContent = sock.reauths;
        sockState("authenticated, re-authenticated " + sock.reauths + "×");
        event("Socket re-authenticated with the renewed token, without reconnecting (connection " + sock.connections + ").", "good");
      }
      showRights(d);
      return;
    }
    if (m.Topic === "Identify") {
      if (d.Result === "Success") {
        if (sock.lapsed) {
          sock.lapsed = false;
          sockState("authenticated");
        }
        showRights(d);
      } else if (sock.authed) {
        lapsed(String(d.Result));
      }
    }
  }

  // --- the quote board ---------------------------------------------------

  const rows = new Map(); // symbol -> row
  const depthWanted = new Set(); // symbols whose depth is shown
  const fields = ["Last", "Change", "BestBid", "BestAsk", "Volume"];

  const venueOf = (sym) => sym.slice(sym.lastIndexOf(".") + 1);
  const currentEntitlements = () => sock.entitlements || entitlements(claims);
  const holds = (sym, feed) => hasScope("Service/Market") && currentEntitlements().includes(venueOf(sym) + ":" + feed);

  // refusal says why a subscription was refused or ended, from the
  // session's rights as the socket last said them (they may have narrowed
  // since the token was issued), else the token's.
  function refusal(sym, feed) {
    const pair = venueOf(sym) + ":" + feed;
    const ent = currentEntitlements();
    if (!hasScope("Service/Market")) return "refused: the token has no Service/Market scope";
    if (!ent.includes(pair)) return "refused: no entitlement to " + pair + " (this session holds " + (ent.join(" ") || "no venue") + ")";
    return "refused by the gateway (Authority)";
  }

  function addSymbol(sym) {
    sym = sym.trim().toUpperCase();
    if (!/^[A-Z0-9]{1,12}\.[A-Z0-9]{1,16}$/.test(sym)) {
      event("“" + sym + "” is not a symbol: CODE.VENUE, e.g. BHP.ASX.", "bad");
      return;
    }
    if (rows.has(sym)) return;
    const tr = el("tr");
    tr.dataset.symbol = sym;
    const cells = {};
    const head = el("th", sym);
    head.scope = "row";
    cells.Name = el("span", "", "name");
    head.append(cells.Name);
    tr.append(head);
    for (const f of fields) {
      cells[f] = el("td", "", "num");
      cells[f].dataset.field = f;
      tr.append(cells[f]);
    }
    cells.state = el("td", "", "state");
    tr.append(cells.state);
    const cell = el("td");
    const actions = el("div", null, "row-actions");
    cell.append(actions);
    const depth = el("button", "Depth");
    depth.type = "button";
    depth.setAttribute("aria-pressed", "false");
    depth.setAttribute("aria-label", "Depth of " + sym);
    depth.addEventListener("click", () => toggleDepth(sym, depth));
    const remove = el("button", "Remove");
    remove.type = "button";
    remove.setAttribute("aria-label", "Remove " + sym);
    remove.addEventListener("click", () => removeSymbol(sym));
    actions.append(depth, remove);
    tr.append(cell);
    $("quote-table").tBodies[0].append(tr);
    const row = { sym, tr, cells, state: "", last: undefined, close: undefined, txn: 0, ticks: 0 };
    rows.set(sym, row);
    setRowState(row, "waiting for the socket");
    if (sock.authed) subscribe(row);
  }

  function setRowState(row, text, cls) {
    row.state = text;
    row.cells.state.textContent = text;
    row.cells.state.className = "state " + (cls || "");
    row.tr.dataset.state = text.split(/[ :]/)[0];
  }

  function subscribe(row) {
    row.authority = "";
    row.txn = send({ Controller: "Market", Topic: "Security!" + row.sym, Action: "Sub" });
    if (row.txn) setRowState(row, "subscribing");
  }

  function removeSymbol(sym) {
    const row = rows.get(sym);
    if (!row) return;
    if (sock.authed && (row.state === "live" || row.state === "subscribing")) send({ Controller: "Market", Topic: "Security!" + sym, Action: "Unsub" });
    if (depthWanted.has(sym)) toggleDepth(sym, row.tr.querySelector("button"));
    row.tr.remove();
    rows.delete(sym);
  }

  const num = (v) => (typeof v === "number" ? v : v === undefined || v === null || v === "" ? undefined : Number(v));

  function applyQuote(row, d) {
    if (typeof d.Name === "string") row.cells.Name.textContent = d.Name.slice(0, 200);
    const close = num(d.Close);
    if (Number.isFinite(close)) row.close = close;
    const last = num(d.Last);
    if (Number.isFinite(last)) {
      const prev = row.last;
      row.last = last;
      row.cells.Last.textContent = last.toFixed(2);
      if (prev !== undefined && prev !== last) {
        row.ticks++;
        row.tr.dataset.ticks = row.ticks;
        const up = last > prev;
        row.cells.Last.classList.remove("up", "down", "flash");
        void row.cells.Last.offsetWidth; // restart the flash
        row.cells.Last.classList.add(up ? "up" : "down", "flash");
      }
      if (row.close !== undefined) {
        const ch = last - row.close;
        row.cells.Change.textContent = (ch > 0 ? "▲ +" : ch < 0 ? "▼ " : "") + ch.toFixed(2);
        row.cells.Change.className = "num " + (ch > 0 ? "up" : ch < 0 ? "down" : "unchanged");
      }
    }
    const bid = num(d.BestBid), ask = num(d.BestAsk), vol = num(d.Volume);
    if (Number.isFinite(bid)) row.cells.BestBid.textContent = bid.toFixed(2);
    if (Number.isFinite(ask)) row.cells.BestAsk.textContent = ask.toFixed(2);
    if (Number.isFinite(vol)) row.cells.Volume.textContent = vol.toLocaleString("en");
  }

  function handleMarket(m) {
    const topic = m.Topic || "";
    const bang = topic.indexOf("!");
    const kind = bang < 0 ? topic : topic.slice(0, bang);
    const sym = bang < 0 ? "" : topic.slice(bang + 1);
    if (kind === "Depth") return handleDepth(m, sym);
    const row = rows.get(sym);
    if (kind !== "Security" || !row) return;
    if (m.Action === "Error") {
      const code = String(m.Data);
      // An Error for a flowing subscription is the server ending it (its
      // Unsub follows): the session lost the right to it.
      const verb = row.state === "live" ? "ended" : "refused";
      let text;
      if (code.startsWith("Authority")) {
        // Said again when the socket's new rights arrive (showRights),
        // which may come after the Error.
        row.authority = verb;
        text = refusal(sym, "quotes").replace(/^refused/, verb);
      } else {
        text = verb + (code.startsWith("Operation.NoResult") ? ": no such symbol" : ": " + code);
      }
      setRowState(row, text, "bad");
      event(sym + ": " + text + ".", "bad");
      return;
    }
    if (m.Action === "Unsub") {
      if (row.state === "live") {
        row.authority = "ended";
        setRowState(row, refusal(sym, "quotes").replace(/^refused/, "ended"), "bad");
        event(sym + ": the server ended the subscription.", "bad");
      }
      return;
    }
    if (m.Confirm && m.Action === "Sub") {
      setRowState(row, "live", "good");
      return;
    }
    if (m.Data && typeof m.Data === "object") {
      if (row.state !== "live") setRowState(row, "live", "good");
      applyQuote(row, m.Data);
    }
  }

  // --- depth -------------------------------------------------------------

  const MAX_LEVELS = 20; // levels of a book shown a side

  function depthBox(sym) {
    let box = document.querySelector('#depths [data-symbol="' + sym + '"]');
    if (!box) {
      box = el("div", null, "depth");
      box.dataset.symbol = sym;
      box.append(el("h3", "Depth of " + sym), el("p", "subscribing", "state"), el("div", null, "book"));
      $("depths").append(box);
    }
    return box;
  }

  function subscribeDepth(sym) {
    delete depthBox(sym).dataset.refused;
    send({ Controller: "Market", Topic: "Depth!" + sym, Action: "Sub" });
  }

  function toggleDepth(sym, button) {
    if (depthWanted.has(sym)) {
      depthWanted.delete(sym);
      if (button) button.setAttribute("aria-pressed", "false");
      send({ Controller: "Market", Topic: "Depth!" + sym, Action: "Unsub" });
      depthBox(sym).remove();
      return;
    }
    depthWanted.add(sym);
    if (button) button.setAttribute("aria-pressed", "true");
    if (sock.authed) subscribeDepth(sym);
    else depthBox(sym).querySelector(".state").textContent = "waiting for the socket";
  }

  function handleDepth(m, sym) {
    if (!depthWanted.has(sym)) return;
    const box = depthBox(sym);
    const state = box.querySelector(".state");
    if (m.Action === "Error") {
      const code = String(m.Data);
      state.textContent = code.startsWith("Authority") ? refusal(sym, "depth") : "refused: " + code;
      state.className = "state bad";
      if (code.startsWith("Authority")) box.dataset.refused = "1";
      event("Depth of " + sym + ": " + state.textContent + ".", "bad");
      return;
    }
    if (m.Action === "Unsub") {
      state.textContent = "ended by the server";
      state.className = "state bad";
      return;
    }
    const d = m.Data;
    if (!d || typeof d !== "object" || !Array.isArray(d.Bids) || !Array.isArray(d.Asks)) {
      if (m.Confirm) { state.textContent = "live"; state.className = "state good"; }
      return;
    }
    state.textContent = "live";
    state.className = "state good";
    const t = el("table");
    t.append(el("caption", "Order book of " + sym, "visually-hidden"));
    const head = el("tr");
    for (const h of ["Bid qty", "Bid", "Ask", "Ask qty"]) {
      const th = el("th", h, "num");
      th.scope = "col";
      head.append(th);
    }
    t.append(el("thead"));
    t.tHead.append(head);
    const body = el("tbody");
    const price = (v) => (Number.isFinite(num(v)) ? num(v).toFixed(2) : "");
    const qty = (v) => (Number.isFinite(num(v)) ? String(num(v)) : "");
    // The book's first levels: a backend may send any number.
    for (let i = 0; i < Math.min(MAX_LEVELS, Math.max(d.Bids.length, d.Asks.length)); i++) {
      const b = (d.Bids[i] && typeof d.Bids[i] === "object") ? d.Bids[i] : {};
      const a = (d.Asks[i] && typeof d.Asks[i] === "object") ? d.Asks[i] : {};
      const tr = el("tr");
      tr.append(el("td", qty(b.Quantity), "num"), el("td", price(b.Price), "num up"),
        el("td", price(a.Price), "num down"), el("td", qty(a.Quantity), "num"));
      body.append(tr);
    }
    t.append(body);
    box.querySelector(".book").replaceChildren(t);
  }

  // --- queries -----------------------------------------------------------

  const MAX_ROWS = 1000; // rows of an answer shown
  const tableName = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

  // query POSTs to the query service with the access token. A 401 (the
  // token revoked, or narrowed by an entitlement change) is tried once
  // more after a renewal, with the new token.
  async function query(path, body, contentType) {
    const once = async () => {
      const res = await fetch(queryBase + path, {
        method: "POST",
        headers: { Authorization: "Bearer " + user.access_token, "Content-Type": contentType, Accept: "application/json" },
        body,
      });
      const text = await res.text();
      let json;
      try {
        json = JSON.parse(text);
      } catch (e) {
        json = undefined;
      }
      return { status: res.status, statusText: res.statusText, text, json };
    };
    const r = await once();
    if (r.status !== 401 || !(await renew("the query service answered 401"))) return r;
    return once();
  }

  // send runs a request and shows its answer, or why it was not sent.
  async function ask(target, what, request) {
    let r;
    try {
      r = await request();
    } catch (e) {
      // The request may have reached the service: only its answer is
      // known to be lost.
      r = { status: 0, statusText: "no answer (the request may have been carried out)", text: String(e), lost: true };
    }
    showAnswer(target, what, r);
    return r;
  }

  function showAnswer(target, what, r) {
    const out = $(target);
    out.replaceChildren();
    const ok = r.status >= 200 && r.status < 300;
    const head = el("p", what + ": " + r.status + (r.statusText ? " " + r.statusText : ""), ok ? "good" : "bad");
    head.dataset.status = r.status;
    out.append(head);
    const j = r.json;
    if (ok && j && Array.isArray(j.Rows) && j.Columns && typeof j.Columns === "object" && !Array.isArray(j.Columns)) {
      const cols = Object.entries(j.Columns)
        .map(([name, c]) => [name, c && Number.isInteger(c.Index) ? c.Index : Infinity])
        .sort((a, b) => a[1] - b[1]).map(([name]) => name);
      const shown = j.Rows.slice(0, MAX_ROWS);
      out.append(el("p", j.Rows.length + (j.Rows.length === 1 ? " row" : " rows") +
        (j.Rows.length > shown.length ? ", the first " + shown.length + " shown" : ""), "help"));
      const wrap = el("div", null, "scroll");
      const t = el("table", null, "rows");
      const hr = el("tr");
      for (const c of cols) {
        const th = el("th", c);
        th.scope = "col";
        hr.append(th);
      }
      t.append(el("thead"));
      t.tHead.append(hr);
      const body = el("tbody");
      for (const row of shown) {
        const tr = el("tr");
        for (const v of Array.isArray(row) ? row.slice(0, cols.length) : []) {
          tr.append(el("td", v === null ? "" : typeof v === "object" ? JSON.stringify(v) : v));
        }
        body.append(tr);
      }
      t.append(body);
      wrap.append(t);
      out.append(wrap);
    } else {
      // The service's answer as it wrote it.
      const pre = el("pre", r.text, ok ? "" : "bad");
      pre.className += " answer";
      out.append(pre);
    }
  }

  function runIQL(statement) {
    return ask("result", "IQL", () => query("", statement, "text/plain; charset=utf-8"));
  }

  function badTable(table) {
    showAnswer("result", "Not sent", { status: 0, statusText: "", text: "“" + table + "” is not a table name: letters, digits and _." });
  }

  function runSelect(form) {
    const f = new FormData(form);
    const table = String(f.get("table")).trim();
    if (!tableName.test(table)) return badTable(table);
    const cols = String(f.get("columns")).split(",").map((s) => s.trim()).filter(Boolean);
    const criteria = [];
    if (String(f.get("column")).trim()) {
      let value = String(f.get("value"));
      if (value !== "" && !Number.isNaN(Number(value))) value = Number(value);
      criteria.push({ ColumnName: String(f.get("column")).trim(), Operator: String(f.get("operator")), Value: value });
    }
    const q = cols.length ? "?columns=" + encodeURIComponent(cols.join(",")) : "";
    return ask("result", "Select from " + table, () => query("/" + table + "/select" + q, JSON.stringify(criteria), "application/json"));
  }

  function runInsert(form) {
    const f = new FormData(form);
    const table = String(f.get("table")).trim();
    if (!tableName.test(table)) return badTable(table);
    let row;
    try {
      row = JSON.parse(String(f.get("row")));
    } catch (e) {
      showAnswer("result", "Insert", { status: 0, statusText: "not sent", text: "The row is not JSON: " + e.message });
      return;
    }
    return ask("result", "Insert into " + table, () => query("/" + table + "/insert", JSON.stringify(row), "application/json"));
  }

  // --- orders ------------------------------------------------------------

  const tradeScopes = () => cfg.stepUpScopes.split(" ").filter(Boolean);

  // loadAccounts fills the order form's account list with the user's
  // accounts, keeping the one chosen; it says how many there are.
  async function loadAccounts(chosen) {
    if (!hasScope("Service/Trading")) return 0;
    const r = await query("/Account/select?columns=AccountId,Name", "[]", "application/json").catch(() => null);
    if (!r || r.status !== 200 || !r.json || !Array.isArray(r.json.Rows)) return 0;
    const sel = $("order-account");
    sel.replaceChildren();
    for (const row of r.json.Rows.slice(0, MAX_ROWS)) {
      if (!Array.isArray(row) || typeof row[0] !== "string") continue;
      const o = el("option", row[0] + (row[1] ? " — " + row[1] : ""));
      o.value = row[0];
      sel.append(o);
    }
    if (chosen) sel.value = chosen;
    return sel.options.length;
  }

  function orderFrom(form) {
    const f = new FormData(form);
    const order = {
      AccountId: String(f.get("account") || ""),
      Code: String(f.get("code")).trim().toUpperCase(),
      Exchange: String(f.get("exchange")).trim().toUpperCase(),
      Side: String(f.get("side")),
      Quantity: Number(f.get("quantity")),
    };
    if (String(f.get("price")).trim() !== "") order.Price = Number(f.get("price"));
    return order;
  }

  // fillOrder puts an order back in the form.
  function fillOrder(o) {
    const form = $("order-form");
    for (const [name, v] of [["code", o.Code], ["exchange", o.Exchange], ["side", o.Side], ["quantity", o.Quantity], ["price", o.Price]]) {
      if (v !== undefined && form.elements[name]) form.elements[name].value = String(v);
    }
  }

  // afterStepUp is the return from a step-up with the order that sent the
  // user there: the form holds it again, with the user's accounts to
  // choose from, and waits for the user to place it. It is never placed
  // unseen: the account was not known before, and time has passed.
  async function afterStepUp(o) {
    fillOrder(o);
    const missing = tradeScopes().filter((s) => !hasScope(s));
    if (missing.length) {
      // Asked for and not granted: the user has no second factor to pass,
      // or no right to them. Asking again would loop.
      const text = "The identity server did not grant " + missing.join(" and ") +
        ": the user needs a second factor (the account page sets one up) and the right to trade. The order was not placed.";
      $("order-result").replaceChildren(el("p", text, "bad"));
      event(text, "bad");
      return;
    }
    const n = await loadAccounts(o.AccountId);
    const p = el("p", "Signed in with " + tradeScopes().join(" and ") + ". Check the order" +
      (n > 1 ? " and choose the account" : "") + ", then press Place order.", "good");
    p.id = "order-ready";
    $("order-result").replaceChildren(p);
    event("Back from the step-up: the order waits in the form.");
    $("order-form").querySelector("button[type=submit]").focus();
  }

  async function order(o) {
    const missing = tradeScopes().filter((s) => !hasScope(s));
    if (missing.length) {
      // A step-up: sign in again asking for the trading scopes. The
      // identity server asks for a second factor where they need one; the
      // order waits in the request's state and comes back to the form.
      $("order-result").replaceChildren(el("p", "Placing an order needs " + missing.join(" and ") + ": signing in again for them…"));
      event("Step-up: asking the identity server for " + missing.join(" ") + ".");
      await mgr.signinRedirect({ scope: cfg.scopes + " " + cfg.stepUpScopes, state: { order: o } });
      return;
    }
    if (!o.AccountId && (await loadAccounts()) !== 1) {
      $("order-result").replaceChildren(el("p", "Choose the account, then press Place order.", "bad"));
      return;
    }
    if (!o.AccountId) o.AccountId = $("order-account").value;
    const r = await ask("order-result", "Order " + o.Side + " " + o.Quantity + " " + o.Code + "." + o.Exchange + " in " + o.AccountId,
      () => query("/Order/insert", JSON.stringify(o), "application/json"));
    const statement = "select OrderId, AccountId, Code, Exchange, Side, Quantity, Price, Status from Order";
    if (r.status >= 200 && r.status < 300) {
      event("Order placed: " + o.Side + " " + o.Quantity + " " + o.Code + "." + o.Exchange + " in " + o.AccountId + ".", "good");
      $("iql").value = statement;
      await runIQL(statement);
    } else if (r.lost) {
      // Whether it was placed is for the orders to say, before any retry.
      event("The order's answer was lost: listing the orders to see whether it was placed.", "bad");
      $("iql").value = statement;
      await runIQL(statement);
    } else {
      event("Order refused (" + r.status + ").", "bad");
    }
  }

  // --- sign-in and renewal -----------------------------------------------

  function signedIn(u) {
    user = u;
    sock.renewedFor = "";
    $("welcome").hidden = true;
    $("board").hidden = false;
    $("signin").hidden = true;
    $("signout").hidden = false;
    status("Signed in as " + (u.profile.preferred_username || u.profile.name || u.profile.sub) + ".", "good");
    showIdentity();
    // afterStepUp loads the accounts itself, keeping the order's.
    if (!(u.state && u.state.order)) loadAccounts();
    connect();
  }

  // forget removes what the tab keeps of a session: the user, the
  // sign-out's hint, and every sign-in state (a PKCE verifier, an order
  // waiting for a step-up).
  async function forget() {
    await mgr.removeUser().catch(() => {});
    for (const k of Object.keys(sessionStorage)) {
      if (k.startsWith("oidc.") || k.startsWith("console.")) sessionStorage.removeItem(k);
    }
  }

  // signedOut shows the signed-out page; with ended, the session ended
  // under the user (its refresh token refused): the tab forgets it.
  async function signedOut(text, ended) {
    if (ended) {
      signingOut = true;
      clearTimeout(sock.timer);
      clearTimeout(renewTimer);
      if (sock.ws) sock.ws.close(1000, "session ended");
      await forget();
      signingOut = false;
    }
    user = null;
    $("welcome").hidden = false;
    $("board").hidden = true;
    $("signin").hidden = false;
    $("signout").hidden = true;
    status(text || "Signed out.", ended ? "bad" : "");
  }

  // renew renews the tokens with the refresh token, one renewal at a time
  // (the button, the expiry's approach, a lapse, a 401 share it), and says
  // whether it did. A refused refresh token (invalid_grant: the session
  // ended, the user disabled) signs the tab out; any other failure (the
  // identity server unreachable, a 5xx) is tried again, after 2 s doubling
  // to 2 min with jitter, while the tab is signed in.
  let renewing = null;
  let renewTimer = 0;
  let renewRetry = 0;
  function renew(why) {
    if (!renewing) {
      clearTimeout(renewTimer);
      event("Renewing the token (" + why + ")…");
      renewing = mgr.signinSilent().then(() => {
        renewRetry = 0;
        return true;
      }, (e) => {
        event("Renewal failed: " + (e.error || e.message || e) + ".", "bad");
        if (e.error === "invalid_grant" || e.error === "login_required") {
          signedOut("The session ended (" + e.error + "): sign in again.", true);
        } else if (user && !signingOut) {
          const wait = Math.min(120, 2 * 2 ** renewRetry++) * (0.5 + Math.random());
          event("Renewing again in " + wait.toFixed(1) + " s.", "bad");
          renewTimer = setTimeout(() => renew("again, after a failure"), wait * 1000);
        }
        return false;
      }).finally(() => { renewing = null; });
    }
    return renewing;
  }
  window.addEventListener("online", () => { if (user && user.expired) renew("back online"); });

  mgr.events.addUserLoaded((u) => {
    // The first sign-in is start()'s; a sign-out's revocation stores the
    // user once more, which is no renewal.
    if (!user || signingOut) return;
    user = u;
    showIdentity();
    event("Token renewed with the refresh token; it expires in " + Math.floor(u.expires_in / 60) + " min.", "good");
    if (sock.ws && sock.ws.readyState === WebSocket.OPEN) sendAuth();
    else connect();
  });
  mgr.events.addAccessTokenExpiring(() => {
    if (user && !signingOut) renew("it expires within a minute");
  });
  mgr.events.addAccessTokenExpired(() => {
    event("The access token expired.", "bad");
    for (const row of rows.values()) if (row.state === "live") setRowState(row, "paused: the token expired", "bad");
    renew("it expired");
  });

  $("signin").addEventListener("click", () => mgr.signinRedirect().catch((e) => status("Sign-in failed: " + (e.message || e), "bad")));
  $("signout").addEventListener("click", () => signOut().catch((e) => status("Sign-out failed: " + (e.message || e), "bad")));
  $("renew").addEventListener("click", () => renew("asked"));

  // signOut closes the socket, revokes the refresh token, forgets the user
  // and ends the identity server's session: a form POSTed to its
  // end-session endpoint, so that the ID token given as the hint (the
  // sign-in's, which names the session) is in no URL.
  async function signOut() {
    signingOut = true;
    clearTimeout(sock.timer);
    if (sock.ws) sock.ws.close(1000, "signed out");
    try {
      await mgr.revokeTokens(["refresh_token"]);
    } catch (e) {
      event("Revoking the refresh token failed: " + (e.message || e) + "; the end of the session revokes it.", "bad");
    }
    const hint = sessionStorage.getItem("console.id_token");
    const endpoint = await mgr.metadataService.getEndSessionEndpoint().catch(() => undefined);
    await forget();
    let origin = "";
    try {
      origin = new URL(endpoint).origin;
    } catch (e) {
      /* no endpoint */
    }
    if (!endpoint || (origin !== location.origin && !cfg.formOrigins.includes(origin))) {
      // The policy's form-action would block the form without a word: the
      // tab is signed out, the identity server's session is not.
      signingOut = false;
      signedOut("Signed out of this tab; the identity server's session was not ended (" +
        (endpoint ? "its end-session endpoint is on " + origin + ", which this console may not post to" : "no end-session endpoint") + ").", true);
      return;
    }
    const form = el("form");
    form.method = "post";
    form.action = endpoint;
    const fields = { client_id: cfg.clientId, post_logout_redirect_uri: here };
    if (hint) fields.id_token_hint = hint;
    for (const [name, value] of Object.entries(fields)) {
      const input = el("input");
      input.type = "hidden";
      input.name = name;
      input.value = value;
      form.append(input);
    }
    document.body.append(form);
    form.submit();
  }

  $("add-symbol").addEventListener("submit", (e) => {
    e.preventDefault();
    addSymbol($("symbol").value);
    $("symbol").value = "";
  });
  $("iql-form").addEventListener("submit", (e) => {
    e.preventDefault();
    runIQL($("iql").value);
  });
  $("iql").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      runIQL($("iql").value);
    }
  });
  $("select-form").addEventListener("submit", (e) => {
    e.preventDefault();
    runSelect(e.target);
  });
  $("insert-form").addEventListener("submit", (e) => {
    e.preventDefault();
    runInsert(e.target);
  });
  $("order-form").addEventListener("submit", (e) => {
    e.preventDefault();
    order(orderFrom(e.target));
  });
  setInterval(tick, 1000);

  async function start() {
    let u = null;
    let note = "";
    if (location.pathname === cfg.base + "callback") {
      const url = location.href;
      history.replaceState(null, "", cfg.base);
      try {
        // oidc-client-ts checks the state it sent (and drops it) before it
        // reads a code or an error: an error in a URL nobody sent is not
        // shown as the identity server's.
        u = await mgr.signinRedirectCallback(url);
        if (u.id_token) sessionStorage.setItem("console.id_token", u.id_token);
      } catch (e) {
        note = e.error
          ? "The sign-in came back refused: " + e.error + (e.error_description ? " (" + e.error_description + ")" : "") + "."
          : "The sign-in could not complete: " + (e.message || e) + ".";
        if (e.state && e.state.order) note += " The order was not placed.";
      }
    }
    if (!u) {
      // A session of this tab, if any, goes on (a cancelled step-up, a
      // stale callback URL).
      u = await mgr.getUser();
      if (u && u.expired) {
        u = await mgr.signinSilent().catch(() => null);
        if (!u) await forget();
      }
    }
    if (!u) {
      signedOut(note || "Not signed in.");
      return;
    }
    signedIn(u);
    if (note) {
      status(note, "bad");
      event(note, "bad");
    }
    for (const sym of cfg.symbols) addSymbol(sym);
    if (u.state && u.state.order) await afterStepUp(u.state.order);
  }
  start().catch((e) => status("The console could not start: " + (e.message || e), "bad"));
})();
