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

  async function start(flow, mode) {
    const state = random(), nonce = random();
    const p = new URLSearchParams({ response_type: flow, redirect_uri: callback, state, nonce });
    if (flow === "code") {
      const verifier = random();
      const challenge = b64url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
      p.set("client_id", "demo-app");
      p.set("scope", "openid profile email offline_access Service/Market");
      p.set("code_challenge", challenge);
      p.set("code_challenge_method", "S256");
      sessionStorage.setItem("demo.verifier", verifier);
    } else {
      p.set("client_id", "demo-web");
      p.set("scope", "openid profile email Service/Market");
    }
    if (mode) p.set("response_mode", mode);
    if (document.getElementById("login")?.checked) p.set("prompt", "login");
    sessionStorage.setItem("demo.state", state);
    location.assign(issuer + "/connect/authorize?" + p.toString());
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
    if (got.has("state")) {
      const ok = got.get("state") === expected;
      out.append(el("p", ok ? "state matches the one this page sent." : "state does NOT match: refuse this response.", ok ? "good" : "bad"));
    }
    if (got.has("id_token")) claims(got.get("id_token"), "ID token claims (front channel, not verified here)");
    if (got.has("access_token")) claims(got.get("access_token"), "Access token claims");
    const verifier = sessionStorage.getItem("demo.verifier");
    if (got.has("code") && verifier && !got.has("id_token")) {
      sessionStorage.removeItem("demo.verifier");
      const body = new URLSearchParams({ grant_type: "authorization_code", client_id: "demo-app", code: got.get("code"),
        redirect_uri: callback, code_verifier: verifier });
      const res = await fetch(issuer + "/connect/token", { method: "POST", body,
        headers: { "Content-Type": "application/x-www-form-urlencoded", Accept: "application/json" } });
      const tokens = await res.json();
      out.append(el("h2", "Token response (" + res.status + ")"), el("pre", JSON.stringify(tokens, null, 2)));
      if (tokens.id_token) claims(tokens.id_token, "ID token claims");
    }
  }

  for (const b of document.querySelectorAll("button[data-flow]")) {
    b.addEventListener("click", () => start(b.dataset.flow, b.dataset.mode));
  }
  if (document.getElementById("out")) showCallback();
})();
