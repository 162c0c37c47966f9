// main.js - the site's entry point: the router, the header and the clock.
//
// The route is the part of the URL after '#': #/ (the boards),
// #/board/NAME[/rankings[/GPU]], #/submission/ID, #/me[?filters],
// #/submit[?board=NAME], #/signin, #/admin, #/user/NAME, #/guide/NAME
// (docs/NAME.md: participant, boards; linked from every page's footer).
// Reloading the page keeps it.
// Each page gets a fresh AbortSignal that fires when the route changes, so
// its streams, timers and late answers stop with it.

import {fill, h, deadlineText} from "./dom.js";
import {token, setToken, whoami} from "./api.js";
import {homePage} from "./pages/home.js";
import {boardPage} from "./pages/board.js";
import {submissionPage} from "./pages/submission.js";
import {minePage} from "./pages/mine.js";
import {submitPage} from "./pages/submit.js";
import {signinPage} from "./pages/signin.js";
import {adminPage} from "./pages/admin.js";
import {guidePage} from "./pages/guide.js";
import {userPage} from "./pages/user.js";

const routes = [
  [/^$/, homePage, "home"],
  [/^board\/([^/]+)(?:\/(rankings)(?:\/([^/]+))?)?$/, boardPage, "home"],
  [/^submission\/(\d+)$/, submissionPage, "me"],
  [/^me$/, minePage, "me"],
  [/^user\/([^/]+)$/, userPage, "home"],
  [/^submit$/, submitPage, "submit"],
  [/^signin$/, signinPage, "signin"],
  [/^admin$/, adminPage, "admin"],
  [/^guide\/([a-z]+)$/, guidePage, "guide"],
];

let current = null;

function parseHash() {
  let raw = location.hash.replace(/^#\/?/, "");
  const q = raw.indexOf("?");
  const query = new URLSearchParams(q >= 0 ? raw.slice(q + 1) : "");
  raw = q >= 0 ? raw.slice(0, q) : raw;
  return {path: raw.replace(/\/$/, ""), query};
}

async function route() {
  if (current) current.abort();
  const ctl = new AbortController();
  current = ctl;
  const main = document.getElementById("main");
  const {path, query} = parseHash();
  let page = null, params = [], nav = "";
  for (const [re, fn, n] of routes) {
    const m = re.exec(path);
    if (m) {
      page = fn;
      params = m.slice(1).map(x => (x === undefined ? undefined : decodeURIComponent(x)));
      nav = n;
      break;
    }
  }
  for (const a of document.querySelectorAll("#nav a"))
    a.classList.toggle("on", a.dataset.nav === nav);
  await header();
  if (ctl.signal.aborted) return;
  fill(main);
  window.scrollTo(0, 0);
  if (!page) {
    main.append(h("h1", "Not found"), h("p", "There is no page at ", h("code", location.hash), ". ",
                                       h("a", {href: "#/"}, "See the boards"), "."));
    return;
  }
  try {
    await page({main, params, query, signal: ctl.signal});
  } catch (e) {
    if (e.name === "AbortError" || ctl.signal.aborted) return;
    main.append(h("p.error", {role: "alert"}, "Something went wrong: " + e.message));
  }
}

// The account corner: "alice (admin) · Sign out" or "Sign in".
async function header() {
  const who = document.getElementById("who");
  let u = null, unsure = false;
  try {
    u = await whoami();
  } catch (e) {
    unsure = true; // the server did not answer: keep the token
  }
  document.querySelector('#nav a[data-nav="admin"]').hidden = !(u && u.role === "admin");
  if (u) {
    fill(who, h("span.name", {title: "signed in as " + u.name + " (" + u.role + ")"}, u.name),
         u.role === "admin" ? h("span.badge.role", "admin") : null, " ",
         h("button.linkish", {type: "button", onclick: () => { setToken(""); location.hash = "#/"; }}, "Sign out"));
  } else {
    if (token() && !unsure) setToken(""); // a token that no longer works
    fill(who, h("a", {href: "#/signin"}, "Sign in"));
  }
}

window.addEventListener("hashchange", route);
window.addEventListener("kjudge-account", () => { header(); });
// Countdowns: every element with data-deadline, once a second.
setInterval(() => {
  for (const e of document.querySelectorAll("[data-deadline]")) {
    const t = deadlineText(e.dataset.deadline || null);
    if (e.textContent !== t) e.textContent = t;
  }
}, 1000);
route();
