#!/usr/bin/env python3
"""Run memcached 1.6.18's own test suite (its t/*.t Perl files) against a server.

Each file gets a fresh server (``-t 4 -m 64`` on a free 127.0.0.1 port) and runs
through the suite's ``T_MEMD_USE_DAEMON`` mode, in which ``new_memcached()`` connects to
that server instead of starting one. The TAP output is counted (ok / not ok / planned),
and the server must then stop cleanly on SIGTERM (exit 0, nothing on stderr from a
sanitizer).

    memcached_suite.py --server BIN [--server-kind tsync|memcached] --src TREE
                       [--files suite_files.txt] [--only a.t,b.t] [--check]

``--files`` names the list of files (suite_files.txt beside this script): for each,
``run``, ``xfail <reason>`` (expected to fail against tsync-cached, and why) or
``skip <reason>`` (not run: a memcached-only feature, or options the harness cannot
give). With ``--check`` the exit status is 0 only if every ``run`` file passed (against
stock memcached: every ``run`` and ``xfail`` file, which proves the list); an ``xfail``
file that passes against tsync-cached fails the check too, so the list cannot drift.
"""
import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_list(path):
    """suite_files.txt: '<file> run' | '<file> xfail <reason>' | '<file> skip <reason>'."""
    entries = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip() if not line.lstrip().startswith("#") else ""
            if not line:
                continue
            parts = line.split(None, 2)
            name, kind = parts[0], parts[1]
            reason = parts[2] if len(parts) > 2 else ""
            if kind not in ("run", "xfail", "skip"):
                raise SystemExit(f"{path}: bad kind {kind!r} for {name}")
            if kind != "run" and not reason:
                raise SystemExit(f"{path}: {name} is {kind} without a reason")
            entries.append((name, kind, reason))
    return entries


def start_server(server, kind, port, log):
    args = [server, "-p", str(port), "-l", "127.0.0.1", "-t", "4", "-m", "64", "-U", "0"]
    if kind == "memcached" and os.geteuid() == 0:
        args += ["-u", "root"]
    p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    deadline = time.time() + 20
    while time.time() < deadline:
        if p.poll() is not None:
            raise RuntimeError(f"server exited with {p.returncode} at start")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return p
        except OSError:
            time.sleep(0.05)
    p.kill()
    raise RuntimeError("server did not listen within 20 s")


def stop_server(p, timeout=30):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
    try:
        return p.wait(timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        return "hung on SIGTERM"


TAP_OK = re.compile(rb"^ok \d+")
TAP_NOT_OK = re.compile(rb"^not ok \d+")
TAP_PLAN = re.compile(rb"^1\.\.(\d+)")


def run_file(name, args, shim, timeout):
    port = free_port()
    logpath = os.path.join(shim, f"server-{name}.log")
    with open(logpath, "wb") as log:
        try:
            srv = start_server(args.server, args.server_kind, port, log)
        except RuntimeError as e:
            return dict(name=name, ok=0, notok=0, plan=None, passed=False,
                        why=str(e), out=b"")
        env = dict(os.environ, T_MEMD_USE_DAEMON=f"127.0.0.1:{port}")
        t0 = time.time()
        try:
            r = subprocess.run(["perl", os.path.join("t", name)], cwd=shim, env=env,
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=timeout,
                               start_new_session=True)
            out, rc = r.stdout, r.returncode
        except subprocess.TimeoutExpired as e:
            out, rc = (e.stdout or b"") + b"\n# timed out\n", "timeout"
        secs = time.time() - t0
        alive = srv.poll() is None
        src = stop_server(srv)
    with open(logpath, "rb") as f:
        slog = f.read()
    ok = sum(1 for l in out.splitlines() if TAP_OK.match(l))
    notok = sum(1 for l in out.splitlines() if TAP_NOT_OK.match(l))
    plans = [int(m.group(1)) for l in out.splitlines() if (m := TAP_PLAN.match(l))]
    plan = plans[-1] if plans else None
    why = []
    if rc != 0:
        why.append(f"perl exit {rc}")
    if notok:
        why.append(f"{notok} not ok")
    if plan is not None and plan != ok + notok:
        why.append(f"planned {plan}, ran {ok + notok}")
    if not alive:
        why.append("server died during the file")
    if src != 0:
        why.append(f"server stop: {src}")
    if b"Sanitizer" in slog or b"runtime error" in slog:
        why.append("sanitizer report in the server's stderr")
    return dict(name=name, ok=ok, notok=notok, plan=plan, passed=not why,
                why="; ".join(why), out=out, slog=slog, secs=secs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--server", required=True)
    ap.add_argument("--server-kind", choices=["tsync", "memcached"], default="tsync")
    ap.add_argument("--src", required=True, help="memcached-1.6.18 source tree")
    ap.add_argument("--files", default=os.path.join(HERE, "suite_files.txt"))
    ap.add_argument("--only", default="", help="comma-separated files to run")
    ap.add_argument("--timeout", type=float, default=60,
                    help="seconds per file (an xfail file against tsync-cached: 20)")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--verbose", "-v", action="store_true")
    args = ap.parse_args()

    entries = read_list(args.files)
    if args.only:
        want = set(args.only.split(","))
        entries = [e for e in entries if e[0] in want]
    # The suite takes the directory it runs in as memcached's build directory: it wants
    # t/ there and an executable memcached-debug whose -h it reads for optional features
    # (extstore, SASL, TLS, proxy, unix sockets). The same -h for both servers, naming
    # none of them, so neither server is sent down a feature's path: Debian's memcached
    # has extstore, and metaget.t would otherwise wait forever for an extstore server.
    shim = tempfile.mkdtemp(prefix="mc-suite.")
    try:
        os.symlink(os.path.join(os.path.abspath(args.src), "t"), os.path.join(shim, "t"))
        exe = os.path.join(shim, "memcached-debug")
        with open(exe, "w") as f:
            f.write("#!/bin/sh\n"
                    "if [ \"$1\" = -h ]; then echo 'memcached 1.6.18'; exit 0; fi\n"
                    f"exec {os.path.abspath(args.server)} \"$@\"\n")
        os.chmod(exe, 0o755)
        failed, tot_ok, tot_notok, nfiles, npassed = [], 0, 0, 0, 0
        for name, kind, reason in entries:
            if kind == "skip":
                continue
            r = run_file(name, args, shim,
                         20 if kind == "xfail" and args.server_kind == "tsync" else args.timeout)
            nfiles += 1
            tot_ok += r["ok"]
            tot_notok += r["notok"]
            npassed += r["passed"]
            status = "PASS" if r["passed"] else "FAIL"
            print(f"{status:4} {name:28} ok {r['ok']:5} not ok {r['notok']:3}"
                  f"  {r.get('secs', 0):5.1f}s  [{kind}] {r['why']}", flush=True)
            if not r["passed"] and (args.verbose or (kind == "run" and args.check)
                                    or args.server_kind == "memcached"):
                lines = [l for l in r["out"].decode(errors="replace").splitlines()
                         if not l.startswith("ok ")]
                print("    | " + "\n    | ".join(lines[-40:]))
                if r.get("slog"):
                    print("    server stderr: " + r["slog"].decode(errors="replace")[-2000:])
            # every run and xfail file must pass against stock memcached (else the list
            # is wrong); against tsync-cached every run file must
            must = kind == "run" or args.server_kind == "memcached"
            if must and not r["passed"]:
                failed.append(name)
            if kind == "xfail" and r["passed"] and args.server_kind == "tsync":
                failed.append(name + " (xfail passed: update suite_files.txt)")
        print(f"{args.server_kind}: {npassed} of {nfiles} files passed, "
              f"{tot_ok} assertions ok, {tot_notok} not ok")
        if args.check and failed:
            print("failed: " + ", ".join(failed))
            return 1
        return 0
    finally:
        shutil.rmtree(shim, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
