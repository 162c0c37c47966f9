// pages/signin.js - #/signin: sign in with a token, or register with an
// invite code (POST /api/v1/register), which shows the new token once.
// The token is kept in this tab's sessionStorage only: closing the tab
// signs out. The forms are sent by script (POST bodies, never a URL).

import {api, setToken, whoami} from "../api.js";
import {errorBox, fill, h} from "../dom.js";

export async function signinPage({main}) {
  const u = await whoami();
  main.append(h("h1", "Sign in"));
  if (u) main.append(h("p", "You are signed in as ", h("strong", u.name), ". Signing in again replaces that."));
  const tokIn = h("input", {type: "password", id: "signin-token", autocomplete: "off", size: 40,
                            placeholder: "64 hex digits", required: true});
  const msg1 = h("div", {role: "status"});
  const signin = h("form.card", {method: "post", onsubmit: async ev => {
    ev.preventDefault();
    const t = tokIn.value.trim();
    if (!/^[0-9a-fA-F]{64}$/.test(t)) { fill(msg1, h("p.error", "A token is 64 hexadecimal digits.")); return; }
    setToken(t);
    try {
      const me = await whoami();
      if (!me) throw new Error("the server does not know this token");
      tokIn.value = "";
      location.hash = "#/me";
    } catch (e) {
      setToken("");
      fill(msg1, errorBox(e, "Not signed in"));
    }
  }}, h("h2", "With your token"),
    h("p.muted", "The token you got from the organisers or when you registered. It stays in this browser tab " +
      "only, until you close it or sign out."),
    h("label", "Token ", tokIn), " ", h("button.button", {type: "submit"}, "Sign in"), msg1);

  const nameIn = h("input", {type: "text", id: "reg-name", autocomplete: "username", size: 20, maxlength: 32,
                             pattern: "[a-z0-9][a-z0-9_.\\-]{0,31}", required: true,
                             title: "lower-case letters, digits, '_', '.', '-'; a letter or digit first"});
  const codeIn = h("input", {type: "text", id: "reg-invite", autocomplete: "off", size: 40, required: true});
  const msg2 = h("div", {role: "status"});
  const register = h("form.card", {method: "post", onsubmit: async ev => {
    ev.preventDefault();
    try {
      const r = await api("/api/v1/register", {method: "POST", json: {name: nameIn.value.trim(), invite: codeIn.value.trim()},
                                               noAuth: true});
      setToken(r.token);
      fill(register, tokenOnce(r));
    } catch (e) {
      fill(msg2, errorBox(e, "Not registered"));
    }
  }}, h("h2", "New here? Register with an invite"),
    h("p.muted", "An invite code works once and for 7 days. Names: lower-case letters, digits, '_', '.', '-'."),
    h("p", h("label", "Name ", nameIn)), h("p", h("label", "Invite code ", codeIn)),
    h("button.button", {type: "submit"}, "Register"), msg2);
  main.append(h("div.cards", signin, register));
}

// The new token, shown this once, with what to do with it.
export function tokenOnce(r) {
  const code = h("code.token", {id: "new-token"}, r.token);
  return h("div.once", {role: "alert"},
    h("h2", "Welcome, " + r.name),
    h("p", h("strong", "Save this token now."), " It is shown only this once: the server keeps only a hash of it, " +
      "and it is the only way to sign in again (here, or with ", h("code", "kjudge login --token"), ")."),
    h("p", code, " ", h("button.button.light", {type: "button", onclick: () => navigator.clipboard &&
      navigator.clipboard.writeText(r.token)}, "Copy")),
    h("p", "You are signed in in this tab. ", h("a.button", {href: "#/"}, "Continue")));
}
