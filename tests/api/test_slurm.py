#!/usr/bin/env python3
"""test_slurm.py - deploy/slurm/kjudge-runners.sbatch on a real single-node Slurm.

Starts munged, slurmctld and slurmd (Debian's slurm-wlm and munge) on
localhost with a configuration in a temporary folder: one node with two
fake GPUs in gres.conf, backed by character devices the test creates
(/dev/null's numbers). Starts a real kjudge-server on loopback with a
runner token in a file, submits the launcher with --gres=gpu:2, and
checks: the job runs one task per GPU, each bound to its own GPU
(CUDA_VISIBLE_DEVICES, the name's GPU index) with the expected
`kjudge-runner serve` arguments and the token only as a file; the node's
CPUs and memory taken whole and each runner given its share of the CPUs;
a next job queued with --dependency=singleton starting once it ends; each runner
reaches the server and, on this CPU-only machine, refuses with its "no
usable GPU" reason (or, on a host that cannot build the boxes, that
reason), which the server logs and lists in /metrics; a runner
that stopped is started again; then `scancel` stops every task (each says
so), the job ends CANCELLED and no runner process is left. Skipped, and
counted so, only when the Slurm daemons cannot start here. Each wait is
bounded; the whole test takes seconds. Ends with "test_slurm: N passed, N
failed, N skipped"; exit 1 on failure.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from kjcheck import Counts, check, skip  # noqa: E402
from kjservice import BIN, ROOT  # noqa: E402
import kjdeploy  # noqa: E402
from kjdeploy import ADMIN, cli, request  # noqa: E402

SBATCH = os.path.join(ROOT, "deploy", "slurm", "kjudge-runners.sbatch")
RUNNER = os.path.join(ROOT, "bin", "kjudge-runner")
NODE = "kjnode"
GPUS = 2
TOOLS = ["munged", "slurmctld", "slurmd", "sbatch", "srun", "sinfo", "squeue", "scancel", "scontrol"]


def wait_for(pred, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.2)
    return pred()


def tail(path, n=1200):
    try:
        with open(path, errors="replace") as f:
            return f.read()[-n:]
    except OSError:
        return "(no %s)" % path


def pid_in(path):
    """True once path holds a process id (a daemon writes its pid file after creating it)."""
    try:
        with open(path) as f:
            return f.read().strip().isdigit()
    except OSError:
        return False


class Slurm:
    """munged + slurmctld + slurmd, everything under one folder."""

    def __init__(self, d):
        self.d = d
        self.conf = os.path.join(d, "slurm.conf")
        self.env = dict(os.environ, SLURM_CONF=self.conf)
        self.pids = {}

    def write(self, gpu_files):
        d = self.d
        for sub in ("munge", "state", "spool", "log"):
            os.makedirs(os.path.join(d, sub), mode=0o755, exist_ok=True)
        key = os.path.join(d, "munge", "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o400)
        os.chmod(os.path.join(d, "munge"), 0o755)
        ctld, slurmd = kjdeploy.free_port(), kjdeploy.free_port()
        with open(self.conf, "w") as f:
            f.write("\n".join([
                "ClusterName=kjtest", "SlurmctldHost=localhost", "SlurmUser=root", "SlurmdUser=root",
                "SlurmctldPort=%d" % ctld, "SlurmdPort=%d" % slurmd,
                "AuthType=auth/munge", "CredType=cred/munge",
                "AuthInfo=socket=%s/munge/sock" % d,
                "StateSaveLocation=%s/state" % d, "SlurmdSpoolDir=%s/spool" % d,
                "SlurmctldPidFile=%s/slurmctld.pid" % d, "SlurmdPidFile=%s/slurmd.pid" % d,
                "SlurmctldLogFile=%s/log/slurmctld.log" % d, "SlurmdLogFile=%s/log/slurmd.log" % d,
                "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
                "JobAcctGatherType=jobacct_gather/none", "AccountingStorageType=accounting_storage/none",
                "SchedulerType=sched/builtin", "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core",
                "ReturnToService=2", "MpiDefault=none", "KillWait=10", "MailProg=/bin/true",
                "GresTypes=gpu",
                "NodeName=%s NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=%d RealMemory=100 Gres=gpu:%d State=UNKNOWN"
                % (NODE, os.cpu_count() or 1, GPUS),
                "PartitionName=kj Nodes=%s Default=YES MaxTime=10 State=UP" % NODE, ""]))
        with open(os.path.join(d, "gres.conf"), "w") as f:  # read from slurm.conf's folder
            f.write("NodeName=%s Name=gpu File=%s\n" % (NODE, ",".join(gpu_files)))

    def run(self, *args, timeout=30):
        return subprocess.run(list(args), env=self.env, capture_output=True, text=True, timeout=timeout)

    def start(self):
        """Start the three daemons; returns None or why they could not start."""
        d = self.d
        p = self.run("munged", "-f", "-S", d + "/munge/sock", "--key-file=" + d + "/munge/munge.key",
                     "--log-file=" + d + "/munge/log", "--pid-file=" + d + "/munge/pid",
                     "--seed-file=" + d + "/munge/seed")
        if p.returncode != 0:
            return "munged: " + (p.stderr or tail(d + "/munge/log"))[-400:]
        self.pids["munged"] = int(open(d + "/munge/pid").read())
        p = self.run("slurmctld", "-f", self.conf)
        if p.returncode != 0 or not wait_for(lambda: pid_in(d + "/slurmctld.pid"), 20):
            return "slurmctld: " + (p.stderr + tail(d + "/log/slurmctld.log"))[-600:]
        self.pids["slurmctld"] = int(open(d + "/slurmctld.pid").read())
        p = self.run("slurmd", "-f", self.conf, "-N", NODE)
        if p.returncode != 0 or not wait_for(lambda: pid_in(d + "/slurmd.pid"), 20):
            return "slurmd: " + (p.stderr + tail(d + "/log/slurmd.log"))[-600:]
        self.pids["slurmd"] = int(open(d + "/slurmd.pid").read())
        ok = wait_for(lambda: "idle" in self.run("sinfo", "-h", "-N", "-o", "%t").stdout, 30)
        if not ok:
            return "the node never became idle: " + tail(d + "/log/slurmd.log", 600) + tail(d + "/log/slurmctld.log", 600)
        return None

    def stop(self):
        try:
            self.run("scontrol", "shutdown", timeout=15)
        except subprocess.TimeoutExpired:
            pass
        for name in ("slurmd", "slurmctld", "munged"):
            pid = self.pids.get(name)
            if not pid:
                continue
            if name == "munged" and alive(pid):
                os.kill(pid, signal.SIGTERM)
            if not wait_for(lambda: not alive(pid), 10):
                os.kill(pid, signal.SIGKILL)


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def fake_gpus(d):
    """Two device files for gres.conf: character devices with /dev/null's numbers."""
    files = []
    for i in range(GPUS):
        path = os.path.join(d, "nvidia%d" % i)
        os.mknod(path, 0o666 | 0o020000, os.makedev(1, 3))
        files.append(path)
    return files


def runner_procs(marker):
    """PIDs of processes whose command line mentions marker (our own folder)."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmd and ("kjudge-runner" in cmd) and alive(int(pid)):
            out.append((int(pid), cmd))
    return out


def expected_reason():
    """The reason a runner on this host gives: no usable GPU, or, where the
    host cannot build the boxes (checked first), that."""
    p = subprocess.run([RUNNER, "probe"], capture_output=True, text=True, timeout=60)
    try:
        missing = json.loads(p.stdout)["sandbox"]["missing"]
    except (ValueError, KeyError, TypeError):
        missing = ""
    if missing:
        return r"this host cannot sandbox submissions \(missing: "
    return r"no usable GPU 0: cannot load the CUDA driver"


def test_job(sl, srv, tmp, token_file, token):
    out_file = os.path.join(tmp, "job.out")
    env = dict(sl.env, KJUDGE_SERVER="http://127.0.0.1:%d" % srv.port, KJUDGE_TOKEN_FILE=token_file,
               KJUDGE_HOME=ROOT, KJUDGE_NAME_PREFIX=NODE, KJUDGE_RETRY_S="2")
    p = subprocess.run(["sbatch", "--parsable", "--gres=gpu:%d" % GPUS, "--output=" + out_file, SBATCH],
                       env=env, capture_output=True, text=True, timeout=30, cwd=tmp)
    job = p.stdout.strip().split(";")[0]
    if not check(p.returncode == 0 and job.isdigit(), "sbatch takes the launcher", (p.returncode, p.stderr)):
        return
    names = ["%s-gpu%d" % (NODE, g) for g in range(GPUS)]
    why = expected_reason()

    def refused_twice():
        log = srv.server_log()
        return all(log.count("refused to start runner=%s " % n) >= 2 for n in names)
    got = wait_for(refused_twice, 60)
    check(got, "each runner reaches the server, refuses, and is started again (2 reports each)",
          srv.server_log()[-800:] + tail(out_file))
    q = sl.run("squeue", "-h", "-j", job, "-o", "%T").stdout.strip()
    check(q == "RUNNING", "the job is running", q)
    # CPUs and memory: the node whole, each runner an equal share of its CPUs.
    cpus = os.cpu_count() or 1
    info = sl.run("scontrol", "show", "job", job).stdout
    check(re.search(r"\bNumCPUs=%d\b" % cpus, info) and re.search(r"\bOverSubscribe=NO\b", info)
          and re.search(r"\bMinMemoryNode=0\b", info),
          "the job takes its node whole: all %d CPUs, exclusive, all memory" % cpus,
          re.findall(r"(?:NumCPUs|OverSubscribe|MinMemory\w*)=\S+", info))
    step = sl.run("scontrol", "show", "step", job + ".0").stdout
    per = max(1, cpus // GPUS)
    check(re.search(r"\bCPUs=%d\b" % (per * GPUS), step) and
          "cpus_per_runner=%d" % per in tail(out_file, 100000),
          "each runner's task gets %d of the node's CPUs" % per, re.findall(r"\bCPUs=\S+", step))
    steps = sl.run("squeue", "-h", "-s", "-j", job, "-o", "%i").stdout.split()
    check("%s.0" % job in steps, "the runners run as one job step", steps)
    text = tail(out_file, 100000)
    for g in range(GPUS):
        line = re.search(r"^%d: kjudge-runner-task: node=\S+ task=%d local=%d gpu=%d CUDA_VISIBLE_DEVICES=(\d+): (.*)$"
                         % (g, g, g, g), text, re.M)
        check(line is not None, "task %d is bound to GPU %d" % (g, g), text[-600:])
        if line is None:
            continue
        want = "%s serve --server http://127.0.0.1:%d --gpu 0 --name %s --token-file %s --leaderboards %s" % (
            RUNNER, srv.port, names[g], token_file, os.path.join(ROOT, "leaderboards"))
        check(line.group(2).strip() == want, "task %d runs the expected command" % g, line.group(2))
        check(line.group(1) == str(g), "task %d sees only its GPU (CUDA_VISIBLE_DEVICES=%d)" % (g, g), line.group(1))
        check(re.search(r"^%d: kjudge-runner: %s" % (g, why), text, re.M),
              "task %d's runner says why it refuses (%s)" % (g, why.replace("\\", "")), text[-600:])
    check(token not in text and token not in srv.server_log(), "the token appears in no log or command line")
    st, _, raw = request(srv, "GET", "/metrics", ADMIN)
    hello = re.findall(r'^kjudge_runner_hello\{runner="(%s-gpu\d)",state="refused",gpu="",reason="%s[^"]*"\} 1$'
                       % (NODE, why), raw.decode(), re.M)
    check(sorted(hello) == names, "GET /metrics lists both refusals with their reason", hello)

    # The next job, queued ahead with --dependency=singleton, waits for this one and starts once it ends.
    out2 = os.path.join(tmp, "job2.out")
    p = subprocess.run(["sbatch", "--parsable", "--gres=gpu:%d" % GPUS, "--dependency=singleton", "--output=" + out2,
                        SBATCH], env=env, capture_output=True, text=True, timeout=30, cwd=tmp)
    job2 = p.stdout.strip().split(";")[0]
    check(p.returncode == 0 and job2.isdigit(), "sbatch --dependency=singleton queues the next job", p.stderr)
    q2 = sl.run("squeue", "-h", "-j", job2, "-o", "%T %r").stdout.strip()
    dep = re.findall(r"\bDependency=\S+", sl.run("scontrol", "show", "job", job2).stdout)
    check(q2.startswith("PENDING") and dep == ["Dependency=singleton(unfulfilled)"],
          "the next job waits while this one runs", (q2, dep))

    p = sl.run("scancel", job)
    check(p.returncode == 0, "scancel", p.stderr)
    gone = wait_for(lambda: sl.run("squeue", "-h", "-j", job).stdout.strip() == "", 30)
    check(gone, "the job leaves the queue after scancel", sl.run("squeue").stdout)
    t0 = time.monotonic()
    started = wait_for(lambda: "kjudge-runner-task: node=" in tail(out2), 40)
    check(started, "the next job starts once this one ends (%.1f s)" % (time.monotonic() - t0),
          sl.run("squeue", "-h", "-j", job2, "-o", "%T %r").stdout + tail(out2))
    sl.run("scancel", job2)
    wait_for(lambda: sl.run("squeue", "-h", "-j", job2).stdout.strip() == "", 30)
    state = sl.run("scontrol", "show", "job", job).stdout
    check("JobState=CANCELLED" in state, "the job ends CANCELLED", re.findall(r"JobState=\S+", state))
    # The tasks' last lines reach the output file through slurmstepd, which may
    # write them after squeue no longer lists the job: wait for them a while.
    said = [r"^%d: kjudge-runner-task: stopped runner %s \(task %d\)$" % (g, names[g], g) for g in range(GPUS)]
    wait_for(lambda: all(re.search(r, tail(out_file, 100000), re.M) for r in said), 15)
    text = tail(out_file, 100000)
    for g in range(GPUS):
        check(re.search(said[g], text, re.M),
              "task %d stops on SIGTERM and says so (waited 15 s for its line)" % g, text[-600:])
    left = wait_for(lambda: not runner_procs(ROOT), 15)
    check(left, "no runner or task process is left", runner_procs(ROOT))


def main():
    if not os.access(BIN, os.X_OK) or not os.access(RUNNER, os.X_OK):
        print("FAIL bin/ is not built\ntest_slurm: 0 passed, 1 failed, 0 skipped")
        return 1
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        print("FAIL missing %s (deploy/deps.sh --test installs slurmctld, slurmd, slurm-client, munge)\n"
              "test_slurm: 0 passed, 1 failed, 0 skipped" % " ".join(missing))
        return 1
    with tempfile.TemporaryDirectory(prefix="kjudge-slurm-") as tmp:
        os.chmod(tmp, 0o755)
        sl = Slurm(os.path.join(tmp, "slurm"))
        os.makedirs(sl.d)
        why = None
        try:
            gpu_files = fake_gpus(sl.d)
        except OSError as e:
            why = "cannot create device files for the fake GPUs: %s" % e
        if why is None:
            sl.write(gpu_files)
            why = sl.start()
        try:
            if why is not None:
                skip("Slurm cannot start here: %s" % why)
            else:
                srv = kjdeploy.Server(os.path.join(tmp, "srv"))
                if check(srv.start(), "the server starts"):
                    try:
                        token_file = os.path.join(tmp, "runner.token")
                        rc, token, _ = cli("runner", "add", "slurm-runners", "--gpu", "H200", "--db", srv.db)
                        token = token.strip()
                        with open(token_file, "w") as f:
                            f.write(token + "\n")
                        os.chmod(token_file, 0o600)
                        test_job(sl, srv, tmp, token_file, token)
                    finally:
                        srv.stop(signal.SIGTERM)
        finally:
            sl.stop()
    print("test_slurm: %d passed, %d failed, %d skipped" % (Counts.passed, Counts.failed, Counts.skipped))
    return 1 if Counts.failed else 0


if __name__ == "__main__":
    sys.exit(main())
