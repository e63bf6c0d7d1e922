// The Switchboard console's script: sign-in, fetching the server-rendered
// fragments with the caller's identity, forms, and live updates read from
// Server-Sent Events streams. Every fragment is HTML the gateway rendered
// and escaped; this script only places it. It is hand-written and has no
// dependencies (docs/console.md).
"use strict";

(function () {
  const store = window.sessionStorage;
  let views = new AbortController(); // ends the current view's streams

  // A dev-mode suite's console link carries its per-run secret in the
  // fragment (#dev-secret=…), which never reaches a server: it is kept in
  // this tab's session storage, sent with every request, and taken out of
  // the address (and the history) at once.
  function takeDevSecret() {
    const m = /^#dev-secret=([A-Za-z0-9_-]+)$/.exec(window.location.hash);
    if (!m) return false;
    store.setItem("sb.devsecret", m[1]);
    window.history.replaceState(null, "", window.location.pathname + window.location.search);
    return true;
  }

  // forget signs out, keeping the dev suite's secret: it is the tab's
  // right to ask, not a sign-in.
  function forget() {
    const secret = store.getItem("sb.devsecret");
    store.clear();
    if (secret) store.setItem("sb.devsecret", secret);
  }

  // headers name the caller: an API token, or in dev mode the identity,
  // with the dev suite's secret.
  function headers() {
    const h = {};
    const secret = store.getItem("sb.devsecret");
    if (secret) h["Switchboard-Dev-Secret"] = secret;
    const token = store.getItem("sb.token");
    const name = store.getItem("sb.identity");
    if (token) {
      h["Authorization"] = "Bearer " + token;
    } else if (name) {
      h["Switchboard-Identity"] = name;
      const grade = store.getItem("sb.grade");
      if (grade) h["Switchboard-Grade"] = grade;
    }
    return h;
  }

  function signedIn() {
    return Boolean(store.getItem("sb.token") || store.getItem("sb.identity"));
  }

  function $(id) { return document.getElementById(id); }

  // refusal shows a sentence as text, never as markup.
  function refusal(el, sentence) {
    const p = document.createElement("p");
    p.className = "refusal";
    p.setAttribute("role", "alert");
    p.textContent = sentence;
    el.replaceChildren(p);
  }

  // place puts an answer's fragment in el. The identity check answers
  // refusals as JSON envelopes; the console's own routes answer HTML.
  async function place(res, el) {
    const type = res.headers.get("Content-Type") || "";
    if (type.startsWith("application/json")) {
      let sentence = res.status + " " + res.statusText;
      try { sentence = (await res.json()).error || sentence; } catch (e) { /* keep the status */ }
      refusal(el, sentence);
    } else {
      el.innerHTML = await res.text();
    }
    if (res.status === 401) showSignIn();
    activate(el);
  }

  // activate opens the live stream of each element in el that asks for one.
  function activate(el) {
    const lives = Array.from(el.querySelectorAll("[data-live]"));
    if (el.dataset && el.dataset.live) lives.unshift(el);
    lives.forEach((node) => follow(node.dataset.live, node));
  }

  async function get(url, el) {
    try {
      const res = await fetch(url, { headers: headers(), signal: views.signal });
      await place(res, el);
    } catch (e) {
      if (e.name !== "AbortError") refusal(el, "the gateway did not answer: " + e.message);
    }
  }

  // follow reads a Server-Sent Events stream. EventSource cannot send the
  // identity header, so the stream is read with fetch. Each event names
  // the element whose content its HTML replaces.
  async function follow(url, el) {
    let res;
    try {
      res = await fetch(url, { headers: headers(), signal: views.signal });
    } catch (e) {
      return;
    }
    if (!res.ok || !(res.headers.get("Content-Type") || "").startsWith("text/event-stream")) {
      await place(res, el);
      return;
    }
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "";
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buf += value;
        let end;
        while ((end = buf.indexOf("\n\n")) >= 0) {
          dispatch(buf.slice(0, end), el);
          buf = buf.slice(end + 2);
        }
      }
    } catch (e) {
      /* the view changed or the gateway went away */
    }
  }

  function dispatch(block, el) {
    let name = "";
    const data = [];
    block.split("\n").forEach((line) => {
      if (line.startsWith("event: ")) name = line.slice(7);
      else if (line.startsWith("data: ")) data.push(line.slice(6));
    });
    const target = (name && document.getElementById(name)) || el;
    target.innerHTML = data.join("\n");
    target.dataset.updated = String(Date.now());
  }

  // Forms with data-post are sent with fetch, with the caller's identity;
  // the answer replaces the element data-target names.
  document.addEventListener("submit", async (ev) => {
    const form = ev.target;
    if (form.id === "signin") {
      ev.preventDefault();
      signIn(form);
      return;
    }
    if (form.dataset.get) {
      // A filter: its fields become the query of a read.
      ev.preventDefault();
      const query = new URLSearchParams(new FormData(form));
      for (const [k, v] of [...query]) if (!v) query.delete(k);
      get(form.dataset.get + "?" + query, $(form.dataset.target) || $("view"));
      return;
    }
    if (!form.dataset.post) return;
    ev.preventDefault();
    if (form.dataset.confirm && !window.confirm(form.dataset.confirm)) return;
    const el = $(form.dataset.target) || $("view");
    const button = form.querySelector("button[type=submit]");
    if (button) button.disabled = true;
    try {
      const res = await fetch(form.dataset.post, {
        method: "POST",
        headers: headers(),
        body: new URLSearchParams(new FormData(form)),
        signal: views.signal,
      });
      await place(res, el);
    } catch (e) {
      if (e.name !== "AbortError") refusal(el, "the gateway did not answer: " + e.message);
    } finally {
      if (button) button.disabled = false;
    }
  });

  function signIn(form) {
    const data = new FormData(form);
    const token = (data.get("token") || "").trim();
    const name = (data.get("identity") || "").trim();
    forget();
    if (token) {
      store.setItem("sb.token", token);
    } else if (name) {
      store.setItem("sb.identity", name);
      if (data.get("grade")) store.setItem("sb.grade", data.get("grade"));
    } else {
      return;
    }
    form.reset();
    start();
  }

  function showSignIn() {
    $("signin").hidden = false;
    $("nav").hidden = true;
    $("whoami").replaceChildren();
  }

  document.addEventListener("click", (ev) => {
    if (ev.target.id === "signout") {
      forget();
      views.abort();
      $("view").replaceChildren();
      showSignIn();
    }
  });

  // route shows the view the address's fragment names.
  function route() {
    views.abort();
    views = new AbortController();
    const hash = decodeURIComponent(window.location.hash.slice(1));
    const [page, arg] = [hash.split("/")[0], hash.slice(hash.indexOf("/") + 1)];
    const enc = encodeURIComponent;
    let url = "/console/api/workspaces";
    switch (page) {
      case "workspace": url = "/console/api/workspaces/" + enc(arg); break;
      case "pins": url = "/console/api/workspaces/" + enc(arg) + "/pins"; break;
      case "tool": url = "/console/api/tools/" + enc(arg); break;
      case "invocations": url = "/console/api/invocations"; break;
      case "servers": url = "/console/api/servers"; break;
      case "tokens": url = "/console/api/tokens"; break;
      case "audit": url = "/console/api/audit"; break;
    }
    document.querySelectorAll("#nav a").forEach((a) => {
      if (a.getAttribute("href") === "#" + page) a.setAttribute("aria-current", "page");
      else a.removeAttribute("aria-current");
    });
    get(url, $("view"));
  }

  function start() {
    if (!signedIn()) {
      showSignIn();
      return;
    }
    $("signin").hidden = true;
    $("nav").hidden = false;
    fetch("/console/api/whoami", { headers: headers() }).then((res) => place(res, $("whoami")));
    route();
  }

  // The link may also be followed from a page already open.
  window.addEventListener("hashchange", () => (takeDevSecret() ? start() : route()));
  takeDevSecret();
  start();
})();
