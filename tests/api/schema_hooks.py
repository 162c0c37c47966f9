"""schema_hooks.py - schemathesis hooks for test_schema.py: which token each route gets.

Loaded by `st run` through SCHEMATHESIS_HOOKS. Tokens come from the
environment (KJ_ST_USER, KJ_ST_RUNNER, KJ_ST_ADMIN, KJ_ST_ROTOR), set by
test_schema.py for users it created on its own server:
- /api/v1/runner/... gets the runner token;
- the admin routes get the admin token;
- POST /api/v1/me/token, which replaces the caller's token, gets a user of
  its own whose new token is picked up from each 200 answer;
- every other route gets the user token (public routes ignore it), the
  popcorn-cli routes (/popcorn/) also as X-Popcorn-Cli-Id.
Schemathesis's own checks still send requests without a token or with a
wrong one (ignored_auth).
"""
import os
import threading

import schemathesis

_rotor = {"token": os.environ.get("KJ_ST_ROTOR", "")}
_lock = threading.Lock()

ADMIN_PATHS = (r"^/api/v1/(users|invites|admin/reload)|^/api/v1/leaderboards/\{name\}/publish$"
               r"|^/api/v1/submissions/\{id\}/disqualify$")


def _bearer(case, token):
    case.headers = case.headers or {}
    case.headers["Authorization"] = "Bearer " + token


@schemathesis.auth(refresh_interval=None, retry_on=[]).apply_to(path_regex=r"^/api/v1/runner/")
class RunnerToken:
    def get(self, case, ctx):
        return os.environ["KJ_ST_RUNNER"]

    def set(self, case, data, ctx):
        _bearer(case, data)


@schemathesis.auth(refresh_interval=None, retry_on=[]).apply_to(path_regex=ADMIN_PATHS)
class AdminToken:
    def get(self, case, ctx):
        return os.environ["KJ_ST_ADMIN"]

    def set(self, case, data, ctx):
        _bearer(case, data)


@schemathesis.auth(refresh_interval=None, retry_on=[]).apply_to(path="/api/v1/me/token")
class RotatingToken:
    def get(self, case, ctx):
        with _lock:
            return _rotor["token"]

    def set(self, case, data, ctx):
        _bearer(case, data)


@schemathesis.auth(refresh_interval=None, retry_on=[]).skip_for(path_regex=r"^/api/v1/runner/") \
    .skip_for(path_regex=ADMIN_PATHS).skip_for(path="/api/v1/me/token")
class UserToken:
    def get(self, case, ctx):
        return os.environ["KJ_ST_USER"]

    def set(self, case, data, ctx):
        _bearer(case, data)
        if case.operation.path.startswith("/popcorn/"):
            case.headers["X-Popcorn-Cli-Id"] = data


@schemathesis.hook
def after_call(ctx, case, response):
    """Keep the token that POST /api/v1/me/token just issued."""
    if case.operation.path != "/api/v1/me/token" or response.status_code != 200:
        return
    try:
        token = response.json().get("token")
    except ValueError:
        return
    if isinstance(token, str) and token:
        with _lock:
            _rotor["token"] = token


# Banning or revoking these would leave the rest of the run nothing but 403s.
PROTECTED = ("st-alice", "st-rotor")


@schemathesis.hook
def before_call(ctx, case, **kwargs):
    """Ban and revoke st-bob instead of the users the run needs. A wait or an
    event stream on an unfinished submission lasts its timeout (up to 600 s),
    a runner's long-poll claim its ?wait (up to 30 s): keep valid ones to 1 s
    so that the run stays bounded."""
    pp = case.path_parameters if isinstance(case.path_parameters, dict) else {}
    if case.operation.path.startswith("/api/v1/users/{name}/") and pp.get("name") in PROTECTED:
        pp["name"] = "st-bob"
    if case.operation.path == "/api/v1/runner/claim":
        # A long-poll claim waits up to 30 s for a job: 1 s at most here.
        q = case.query if isinstance(case.query, dict) else None
        w = q.get("wait") if q is not None else None
        if (isinstance(w, int) and not isinstance(w, bool) and w > 1) or \
                (isinstance(w, str) and w.isdigit() and int(w) > 1):
            q["wait"] = 1 if isinstance(w, int) else "1"
        return
    if case.operation.path not in ("/api/v1/submissions/{id}", "/api/v1/submissions/{id}/events"):
        return
    q = case.query if isinstance(case.query, dict) else None
    if q is None or str(q.get("wait", q.get("stream", ""))) not in ("1", "true", "True"):
        return
    t = q.get("timeout")
    if t is None or (isinstance(t, int) and not isinstance(t, bool) and t > 1):
        q["timeout"] = 1
    elif isinstance(t, str) and t.isdigit() and int(t) > 1:
        q["timeout"] = "1"
