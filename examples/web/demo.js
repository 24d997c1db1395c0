// DEMO-ONLY relying party script: starts the flows (index.html) and shows
// what came back (callback.html). It verifies nothing but state; a real
// relying party verifies the ID token (signature, iss, aud, exp, nonce).
"use strict";
(function () {
  const issuer = location.origin;
  const callback = issuer + "/demo/callback";
  const b64url = (bytes) => btoa(String.fromCharCode(...new Uint8Array(bytes)))
    .replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  const random = () => b64url(crypto.getRandomValues(new Uint8Array(32)));
  const el = (tag, text, cls) => { const e = document.createElement(tag); if (text !== undefined) e.textContent = text; if (cls) e.className = cls; return e; };

  // The trading flow's scopes: Trading and OrderPad need a second factor
  // (second_factor in Caddyfile.example), which the login page asks for.
  const tradeScopes = "openid profile Service/Market Service/Trading Service/OrderPad";

  async function start(flow, mode, trade) {
    const state = random(), nonce = random();
    const p = new URLSearchParams({ response_type: flow, redirect_uri: callback, state, nonce });
    if (flow === "code") {
      const verifier = random();
      const challenge = b64url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
      p.set("client_id", "demo-app");
      p.set("scope", trade ? tradeScopes : "openid profile email offline_access Service/Market");
      p.set("code_challenge", challenge);
      p.set("code_challenge_method", "S256");
      sessionStorage.setItem("demo.verifier", verifier);
    } else {
      p.set("client_id", "demo-web");
      p.set("scope", "openid profile email Service/Market");
    }
    if (trade) sessionStorage.setItem("demo.trade", trade);
    else sessionStorage.removeItem("demo.trade");
    if (mode) p.set("response_mode", mode);
    if (document.getElementById("login")?.checked) p.set("prompt", "login");
    sessionStorage.setItem("demo.state", state);
    location.assign(issuer + "/connect/authorize?" + p.toString());
  }

  // RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0): back to
  // this page, with a state to compare. With the last ID token demo-web
  // received as id_token_hint, the identity server logs out at once;
  // without one, it asks the user to confirm.
  function logout() {
    const state = random();
    sessionStorage.setItem("demo.logout_state", state);
    const p = new URLSearchParams({ client_id: "demo-web", post_logout_redirect_uri: issuer + "/demo/", state });
    const hint = sessionStorage.getItem("demo.id_token");
    if (hint) p.set("id_token_hint", hint);
    sessionStorage.removeItem("demo.id_token");
    location.assign(issuer + "/connect/endsession?" + p.toString());
  }

  function table(title, entries) {
    const out = document.getElementById("out");
    out.append(el("h2", title));
    const t = el("table"), body = el("tbody");
    for (const [k, v] of entries) {
      const tr = el("tr");
      tr.append(el("th", k), el("td", v));
      body.append(tr);
    }
    t.append(body);
    out.append(t);
  }

  function claims(jwt, title) {
    try {
      const part = jwt.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
      const json = JSON.parse(decodeURIComponent(escape(atob(part))));
      document.getElementById("out").append(el("h2", title), el("pre", JSON.stringify(json, null, 2)));
    } catch (e) { /* not a JWT */ }
  }

  async function showCallback() {
    const got = new Map();
    for (const [k, v] of new URLSearchParams(location.search)) got.set(k, v);
    for (const [k, v] of new URLSearchParams(location.hash.slice(1))) got.set(k, v);
    for (const td of document.querySelectorAll("#posted td[data-name]")) got.set(td.dataset.name, td.textContent);
    if (location.search) table("Query", new URLSearchParams(location.search));
    if (location.hash) table("Fragment", new URLSearchParams(location.hash.slice(1)));
    const out = document.getElementById("out");
    const expected = sessionStorage.getItem("demo.state");
    if (got.has("state") && expected === null) {
      // The request did not start on this page (the README's URL, say): there is no
      // state here to compare with.
      out.append(el("p", "This page did not start the request, so it has no state to compare: state came back as \u201c" +
        got.get("state") + "\u201d; check it is the one you sent.", "note"));
    } else if (got.has("state")) {
      const ok = got.get("state") === expected;
      out.append(el("p", ok ? "state matches the one this page sent." : "state does NOT match: refuse this response.", ok ? "good" : "bad"));
    }
    if (got.has("id_token")) {
      claims(got.get("id_token"), "ID token claims (front channel, not verified here)");
      sessionStorage.setItem("demo.id_token", got.get("id_token")); // demo-web's: the flows of the front channel
    }
    if (got.has("access_token")) claims(got.get("access_token"), "Access token claims");
    const verifier = sessionStorage.getItem("demo.verifier");
    if (got.has("code") && !verifier && !got.has("id_token")) {
      // Not this page's request: the code is for whoever holds the PKCE verifier.
      const pre = el("pre", "curl -s -d grant_type=authorization_code -d client_id=demo-app \\\n" +
        "  -d code=" + got.get("code") + " \\\n  -d redirect_uri=" + callback + " \\\n" +
        "  -d code_verifier=YOUR_VERIFIER " + issuer + "/connect/token");
      pre.id = "exchange";
      out.append(el("h2", "Exchange the code (within a minute, once)"), pre);
    }
    if (got.has("code") && verifier && !got.has("id_token")) {
      sessionStorage.removeItem("demo.verifier");
      const body = new URLSearchParams({ grant_type: "authorization_code", client_id: "demo-app", code: got.get("code"),
        redirect_uri: callback, code_verifier: verifier });
      const res = await fetch(issuer + "/connect/token", { method: "POST", body,
        headers: { "Content-Type": "application/x-www-form-urlencoded", Accept: "application/json" } });
      const tokens = await res.json();
      out.append(el("h2", "Token response (" + res.status + ")"), el("pre", JSON.stringify(tokens, null, 2)));
      if (tokens.id_token) claims(tokens.id_token, "ID token claims");
      if (sessionStorage.getItem("demo.trade") && tokens.access_token) {
        sessionStorage.removeItem("demo.trade");
        await placeOrder(tokens);
      }
    }
  }

  // placeOrder buys 10 BHP in the user's first account through the query
  // service, with the access token, and shows its answers. The service
  // fills in the order's Owner from the token's sub.
  async function placeOrder(tokens) {
    const out = document.getElementById("out");
    const granted = (tokens.scope || "").split(" ");
    if (!granted.includes("Service/OrderPad")) {
      out.append(el("p", "The token does not carry Service/OrderPad: the sign-in passed no second factor " +
        "(only trader has one in the demo), so no order can be placed.", "bad"));
      return;
    }
    const call = async (path, body) => {
      const res = await fetch(issuer + "/query/" + path, { method: "POST", body: JSON.stringify(body),
        headers: { Authorization: "Bearer " + tokens.access_token, "Content-Type": "application/json" } });
      return { status: res.status, text: await res.text() };
    };
    const accounts = await call("Account/select?columns=AccountId", []);
    let account;
    try { account = JSON.parse(accounts.text).Rows[0][0]; } catch (e) { /* no account */ }
    if (!account) {
      out.append(el("h2", "Accounts (" + accounts.status + ")"), el("pre", accounts.text));
      return;
    }
    const order = { AccountId: account, Code: "BHP", Exchange: "ASX", Side: "Buy", Quantity: 10, Price: 37.5 };
    const placed = await call("Order/insert", order);
    out.append(el("h2", "Order placed in " + account + " (" + placed.status + ")"), el("pre", JSON.stringify(order, null, 2)));
    const answer = el("pre", placed.text);
    answer.id = "order";
    out.append(el("p", "The query service answered:", placed.status === 200 ? "good" : "bad"), answer);
  }

  for (const b of document.querySelectorAll("button[data-flow]")) {
    b.addEventListener("click", () => start(b.dataset.flow, b.dataset.mode, b.dataset.trade));
  }
  document.getElementById("logout")?.addEventListener("click", logout);
  const back = new URLSearchParams(location.search).get("state");
  if (back && document.getElementById("logout") && back === sessionStorage.getItem("demo.logout_state")) {
    sessionStorage.removeItem("demo.logout_state");
    document.querySelector("main h1").after(el("p", "Signed out: the state came back as sent.", "good"));
  }
  if (document.getElementById("out")) showCallback();
})();
