// pages/admin.js - #/admin: the admin's controls over the API's admin
// routes: queues and runners (GET /stats), accounts (GET /users; ban,
// unban, revoke a token, create one), invites, disqualifying a submission,
// publishing a board's sources and reloading the leaderboards. Tokens and
// invite codes made here are shown once.

import {api, boards, whoami} from "../api.js";
import {ago, errorBox, fill, h, table, timeEl} from "../dom.js";

export async function adminPage({main, signal}) {
  const u = await whoami();
  main.append(h("h1", "Admin"));
  if (!u || u.role !== "admin") {
    main.append(h("p", "This page is for admins. ", u ? "" : h("a", {href: "#/signin"}, "Sign in"), u ? "" : " with an admin token."));
    return;
  }
  const statsBox = h("section", h("h2", "Queues and runners"), h("p.muted", "Loading..."));
  const usersBox = h("section", h("h2", "Accounts"), h("p.muted", "Loading..."));
  main.append(statsBox, h("div.cards", invites(), newUser(() => users(usersBox, signal)), disqualify(),
                          await publish(), reload()), usersBox);
  stats(statsBox, signal);
  users(usersBox, signal);
}

async function stats(box, signal) {
  try {
    const s = await api("/api/v1/stats", {signal});
    fill(box, h("h2", "Queues and runners"),
      h("p", s.users + " accounts, " + s.submissions.total + " submissions (" + s.submissions.disqualified +
        " disqualified, " + s.submissions.withdrawn + " withdrawn)."),
      table(["GPU", "queued", "running", "oldest queued"], s.queues.map(q =>
        [q.gpu, String(q.queued), String(q.running), q.oldest_queued_age_s === null ? "-" : q.oldest_queued_age_s + " s"])),
      s.runners.length ? table(["runner", "GPU", "state", "last seen"], s.runners.map(r =>
        [r.name, r.gpu, {v: r.state, cls: r.state === "silent" ? "bad" : ""}, h("span", {title: r.last_seen}, ago(r.last_seen))]))
        : h("p.muted", "No runner has asked for work yet."));
  } catch (e) {
    if (e.name !== "AbortError") fill(box, h("h2", "Queues and runners"), errorBox(e));
  }
}

async function users(box, signal) {
  let d;
  try {
    d = await api("/api/v1/users", {signal});
  } catch (e) {
    if (e.name !== "AbortError") fill(box, h("h2", "Accounts"), errorBox(e));
    return;
  }
  const msg = h("div");
  const act = (label, path, method, confirmText) => h("button.button.light.small", {type: "button", onclick: async () => {
    if (confirmText && !confirm(confirmText)) return;
    try {
      await api(path, {method, json: method === "POST" ? {} : undefined});
      users(box, signal);
    } catch (e) { fill(msg, errorBox(e)); }
  }}, label);
  const enc = encodeURIComponent;
  fill(box, h("h2", "Accounts"), msg, table(["name", "role", "submissions", "accepted", "pending", "last", "created", ""],
    d.users.map(x => [x.banned ? h("span", x.name, " ", h("span.badge.v-disq", "banned")) : x.name, x.role,
      String(x.submissions.total), String(x.submissions.accepted), String(x.submissions.pending),
      x.last_submission_at ? timeEl(x.last_submission_at) : "-", timeEl(x.created_at),
      x.role === "runner" || x.name === "admin" ? "" : h("span.acts",
        x.banned ? act("unban", "/api/v1/users/" + enc(x.name) + "/unban", "POST")
                 : act("ban", "/api/v1/users/" + enc(x.name) + "/ban", "POST", "Ban " + x.name + "? Their token stops working at once."),
        " ", act("revoke token", "/api/v1/users/" + enc(x.name) + "/tokens", "DELETE",
                 "Revoke " + x.name + "'s token? They need a new one to sign in."))])));
}

function card(title, help, fields, label, run) {
  const msg = h("div.msg", {role: "status"});
  return h("form.card", {onsubmit: async ev => {
    ev.preventDefault();
    fill(msg, h("p.muted", "..."));
    try { fill(msg, await run()); } catch (e) { fill(msg, errorBox(e)); }
  }}, h("h2", title), help ? h("p.muted", help) : null, fields, h("button.button", {type: "submit"}, label), msg);
}

function invites() {
  const days = h("input", {type: "number", min: 1, max: 365, value: 7, size: 4});
  return card("Invite", "A single-use code a newcomer redeems on the sign-in page.",
    h("p", h("label", "valid for ", days, " days")), "Create invite", async () => {
      const r = await api("/api/v1/invites", {method: "POST", json: {days: parseInt(days.value, 10)}});
      return h("div.once", h("p", "Code (shown once): ", h("code.token", r.code)), h("p.muted", "expires ", timeEl(r.expires_at)));
    });
}

function newUser(done) {
  const name = h("input", {type: "text", size: 16, required: true});
  const role = h("select", h("option", "user"), h("option", "admin"));
  return card("New account", null, h("p", h("label", "name ", name), " ", h("label", "role ", role)), "Create",
    async () => {
      const r = await api("/api/v1/users", {method: "POST", json: {name: name.value.trim(), role: role.value}});
      done();
      return h("div.once", h("p", "Token of " + r.name + " (shown once): ", h("code.token", r.token)));
    });
}

function disqualify() {
  const id = h("input", {type: "number", min: 1, size: 6, required: true});
  const reason = h("input", {type: "text", size: 24, required: true});
  return card("Disqualify", "Takes a submission out of the rankings; its author sees the reason.",
    h("p", h("label", "submission # ", id), " ", h("label", "reason ", reason)), "Disqualify", async () => {
      const r = await api("/api/v1/submissions/" + parseInt(id.value, 10) + "/disqualify",
                          {method: "POST", json: {reason: reason.value}});
      return h("p", "#" + r.id + " disqualified.");
    });
}

async function publish() {
  const list = await boards().catch(() => []);
  const sel = h("select", list.map(b => h("option", {value: b.name}, b.name)));
  return card("Publish sources", "After a board's deadline: every signed-in user may then read its submissions.",
    h("p", h("label", "board ", sel)), "Publish", async () => {
      if (!confirm("Publish every source of " + sel.value + "? This cannot be undone.")) return "";
      const r = await api("/api/v1/leaderboards/" + encodeURIComponent(sel.value) + "/publish", {method: "POST", json: {}});
      return h("p", r.leaderboard + (r.already ? " was already published." : " published."));
    });
}

function reload() {
  const force = h("input", {type: "checkbox"});
  return card("Reload leaderboards", "Reads leaderboards/ again; a change that would alter results needs force.",
    h("p", h("label", force, " force")), "Reload", async () => {
      const r = await api("/api/v1/admin/reload", {method: "POST", json: force.checked ? {force: true} : {}});
      const part = (k, xs) => xs && xs.length ? h("li", k + ": " + xs.map(x => (typeof x === "string" ? x : x.name + " (" + x.what + ")")).join(", ")) : null;
      return h("ul", part("added", r.added), part("removed", r.removed), part("edited", r.edited), part("changed", r.changed),
               h("li", (r.unchanged || []).length + " unchanged"));
    });
}
