"""A stand-in for `tsync-bench rt` that checks its arguments against the contract and
prints contract JSON. FAKE_PEAK sets peak_pending; FAKE_ARGS_OUT receives argv."""
import json
import os
import sys


def main(argv):
    if not argv or argv[0] != "rt":
        print("usage: tsync-bench rt ...", file=sys.stderr)
        return 2
    opts = {"--policy": None, "--q-us": "0", "--grace-us": "0", "--obj-size": "64",
            "--seconds": "2", "--json": None}
    tasks = []
    i = 1
    while i < len(argv):
        k = argv[i]
        if k == "--task":
            kv = dict(x.split("=", 1) for x in argv[i + 1].split(","))
            assert set(kv) == {"period_us", "wcet_us", "allocs", "reads", "core", "prio"}, kv
            tasks.append({k2: int(v) for k2, v in kv.items()})
        elif k in opts:
            opts[k] = argv[i + 1]
        else:
            print(f"unknown option {k}", file=sys.stderr)
            return 2
        i += 2
    assert opts["--policy"] in ("rt", "temporal", "general") and opts["--json"] == "-"
    if os.environ.get("FAKE_ARGS_OUT"):
        with open(os.environ["FAKE_ARGS_OUT"], "w") as f:
            json.dump(argv, f)
    for t in tasks:
        t.update(jobs=10, deadline_misses=0, response_us_max=float(t["wcet_us"]))
    print("tsync-bench rt: fake run")  # noise before the JSON is tolerated
    print(json.dumps({
        "policy": opts["--policy"], "q_us": int(opts["--q-us"]),
        "grace_us": int(opts["--grace-us"]), "obj_size": int(opts["--obj-size"]),
        "seconds": float(opts["--seconds"]), "ticks_per_us": 2450.0, "skew_ticks": 300,
        "alpha_ns_max": 1500, "alpha_ns_p99": 900, "beta_ns_max": 120, "beta_ns_p99": 80,
        "read_ns_max": 20000, "write_ns_max": 30000,
        "peak_pending": int(os.environ.get("FAKE_PEAK", "2")), "peak_live": 5,
        "max_wait_us": 100.0, "tasks": tasks}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
