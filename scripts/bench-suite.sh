#!/usr/bin/env bash
# scripts/bench-suite.sh BUILD_DIR PYTHON SUITE... - the benchmarks `make bench` runs, one
# suite per module, each into docs/results/<suite>/ with a COMMAND.txt (scripts/run-bench.sh)
# that records every command, the commit and the machine.
#
#   smr    tsync-bench smr --lat-every 1000, ParSec (EuroSys 2016) §5.1, both layouts; refreshes
#          README.md's results block (ps against the best peer of each workload); then
#          ps's read-interval sweep (scripts/ps-interval-sweep.sh, docs/results/smr-interval)
#   rlu    tsync-bench rlu, the list/hash study of the RLU study (Appl. Sci. 2022) (RCU, RLU, MV-RLU, ParSec, rwlock)
#   oplog  tsync-bench oplog list|counter|rmap, OpLog (MIT TR 2014) §7
#   cache  tsync-bench cache, ParSec (EuroSys 2016) §5.2's in-process memcached study
#   net    tsync-bench cached-net: tsync-cached against stock memcached over the network
#   rt     tsync-bench rt on one task set; tsync-rta validate (measured peak <= G*); the
#          memcached study under admission control (tsync-bench rt-cache, strict and
#          relaxed, Figs. 14-15, and the open-loop overload sweep) into
#          docs/results/rt/cache, refreshing docs/rt.md's
#          targets; the analysis' results block of docs/rt-analysis.md (tsync-rta
#          docs-check --write); RT-SMR (RTAS 2018) §VII
#   prudence  tsync-bench prudence pairs and endurance (unlimited, then in a memory cgroup),
#          then the ablation of Prudence's policies on the endurance run, Prudence (ASPLOS
#          2016) §5, and glibc malloc + ps_call against its peers (docs/results/prudence-call);
#          refreshes docs/prudence.md's figures
#   vmdb   tsync-bench vmdb: the mapping database (ps, rwlock, global-lock, frame-lock,
#          frame-ticket) against a liburcu design and Linux mmap/munmap on a Metis-like
#          trace, ParSec (EuroSys 2016) §5.3 (Figs. 9-10): the model backend, then real
#          memory (memfd), each in the shared layout (one address space, the paper's) and
#          the private one; refreshes docs/vmdb.md's targets
#   hash   tsync-bench hash: ps_hash against liburcu's rculfhash, CK's ck_hs and a pthread
#          rwlock table at 0/10/50 % updates over 1 k, 64 k and 1 M keys (2 threads), then
#          the grow-from-empty and shrink runs (issue 31, docs/hash.md §7)
#
# THREADS (environment): the thread counts, default 1,2,4,... up to the CPU count (smr's
# own default, 1..nproc and 2 x nproc, unless THREADS is set).
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR PYTHON SUITE...}
py=${2:?usage: $0 BUILD_DIR PYTHON SUITE...}
shift 2
here=$(dirname "$0")

smr_threads=()
[ -z "${THREADS:-}" ] || smr_threads=(--threads "$THREADS")
if [ -z "${THREADS:-}" ]; then
	n=$(nproc)
	THREADS=1
	for ((t = 2; t <= n; t *= 2)); do THREADS="$THREADS,$t"; done
	((t / 2 == n)) || THREADS="$THREADS,$n"
fi

run() { bash "$here/run-bench.sh" "$build" "$@"; }
again() { TSYNC_BENCH_APPEND=1 bash "$here/run-bench.sh" "$build" "$@"; }

for suite in "$@"; do
	echo "=== bench suite: $suite (threads $THREADS)"
	case "$suite" in
	smr)
		# --lat-every 1000: one op in 1000 timed alone (clock read before and after it),
		# so the harness's clock is out of the throughput loop for every mechanism and
		# the p99s come from ops timed one by one.
		run smr --lat-every 1000 "${smr_threads[@]}" --out docs/results/smr
		run smr --lat-every 1000 --layout slots "${smr_threads[@]}" --out docs/results/smr-slots
		"$py" bench/smr/plot_smr.py readme README.md \
			--section "Paper layout (ParSec (EuroSys 2016) §5.1: one shared node read, private updates)=docs/results/smr/smr.csv" \
			--section "Slots layout (updates replace nodes readers are reading)=docs/results/smr-slots/smr.csv" \
			--command "make bench"
		echo "bench: README.md results refreshed"
		# What ps's read interval trades (docs/design.md §2.5), at 1 and 2 threads only,
		# which keeps it to about a minute and a half.
		THREADS=1,2 bash "$here/ps-interval-sweep.sh" "$build" "$py" docs/results/smr-interval
		;;
	rlu)
		run rlu --mechanisms rcu,rcu-sync,rlu,rlu-defer,mvrlu,ps,rwlock --threads "$THREADS" \
			--updates 2,20,50 --seconds 2 --out docs/results/rlu
		;;
	oplog)
		run oplog list --threads "$THREADS" --params 0,1000,100,10,1 --seconds 0.5 --repeat 3 \
			--out docs/results/oplog
		again oplog counter --threads "$THREADS" --seconds 0.5 --repeat 3 --out docs/results/oplog
		again oplog rmap --threads "$THREADS" --seconds 0.5 --repeat 3 --out docs/results/oplog
		;;
	cache)
		run cache --threads "$THREADS" --set-pct 0,10,20 --out docs/results/cache
		;;
	net)
		# Half the CPUs serve (-t of both servers), the other half run memcaslap.
		n=$(nproc)
		st=$((n > 1 ? n / 2 : 1))
		cpus=()
		((n < 2)) || cpus=(--server-cpus "0-$((st - 1))" --client-cpus "$st-$((n - 1))")
		# cached_net.py writes its own COMMAND.txt (servers' versions, load average)
		"$build/tsync-bench" cached-net --threads "$st" --memory 64 --conns 32 --runs 5 \
			--seconds 5 "${cpus[@]}" --out docs/results/cache/net
		;;
	rt)
		# tsync-bench rt on one task set (docs/rt.md §6): the rt policy with q = 0 and
		# q = 2 ms, temporal with a 20 ms grace period, and general for comparison.
		T=(--task period_us=1000,wcet_us=100,allocs=2,reads=4,core=0,prio=2
		   --task period_us=5000,wcet_us=500,allocs=1,reads=8,core=0,prio=1
		   --task period_us=2000,wcet_us=200,allocs=1,reads=4,core=1,prio=2
		   --task period_us=10000,wcet_us=1000,allocs=4,reads=16,core=1,prio=1)
		rb=docs/results/rt/bench
		mkdir -p "$rb"
		export TSYNC_BENCH_OUT=$rb
		run rt --policy rt --q-us 0 "${T[@]}" --seconds 5 --json "$rb/rt_q0.json"
		again rt --policy rt --q-us 2000 "${T[@]}" --seconds 5 --json "$rb/rt_q2000.json"
		again rt --policy temporal --grace-us 20000 --q-us 0 "${T[@]}" --seconds 5 \
			--json "$rb/temporal_g20000_q0.json"
		again rt --policy general --q-us 0 "${T[@]}" --seconds 5 --json "$rb/general_q0.json"
		unset TSYNC_BENCH_OUT
		# tsync-rta validate: the analysis' bound G* with the measured overheads against
		# the measured peak (RT-SMR (RTAS 2018) Fig. 14(c)).
		out=docs/results/rt/analysis/validate
		mkdir -p "$out"
		for policy in rt temporal; do
			echo "+ $py -m tsync_rta validate python/examples/two-cores.yaml --bench $build/tsync-bench --policy $policy --out $out/validate-$policy.json"
			PYTHONPATH=python "$py" -m tsync_rta validate python/examples/two-cores.yaml \
				--bench "$build/tsync-bench" --policy "$policy" --seconds 2 \
				--out "$out/validate-$policy.json"
		done
		PYTHONPATH=python "$py" -m tsync_rta docs-check --write
		# The memcached study (RT-SMR (RTAS 2018) §VII-C): calibrate, tsync-rta admission,
		# then the tasks at the chosen periods (strict), with gets served in the slack,
		# closed loop (relaxed), and offered open loop at rising loads (overload). Each
		# writes rt-cache.csv: one CSV for the plots. Strict runs RT_CACHE_REPEAT (3)
		# rounds of the designs in turn per core count; the plots take the medians.
		rc=docs/results/rt/cache
		cores=()
		IFS=, read -ra tc <<<"$THREADS"
		for c in "${tc[@]}"; do ((c > $(nproc))) || cores+=("$c"); done
		cores=$(IFS=,; echo "${cores[*]}")
		rta="PYTHONPATH=python $py -m tsync_rta"
		run rt-cache --mode strict --cores "$cores" --seconds 5 \
			--repeat "${RT_CACHE_REPEAT:-3}" --rta "$rta" --out "$rc/strict"
		run rt-cache --mode relaxed --cores "$cores" --seconds 5 --rta "$rta" --out "$rc/relaxed"
		run rt-cache --mode overload --cores "$cores" --get-rates 50,100,200,400,800 \
			--seconds 5 --rta "$rta" --out "$rc/overload"
		{ cat "$rc/strict/rt-cache.csv"; tail -n +2 "$rc/relaxed/rt-cache.csv"
		  tail -n +2 "$rc/overload/rt-cache.csv"; } >"$rc/rt-cache.csv"
		"$py" bench/rt/plot_rt_cache.py "$rc/rt-cache.csv" --out "$rc" --doc docs/rt.md
		echo "bench: docs/rt.md rt-cache targets and docs/rt-analysis.md results refreshed"
		;;
	prudence)
		# Fig. 6's pairs at every size, then Fig. 3's endurance run: 2 threads updating
		# 8 MiB of 512-byte nodes each plus a reader, 60 s, without a limit and in a
		# memory cgroup of PRUDENCE_LIMIT_MIB (default 128: 8x the 16 MiB live set, above
		# the start-up peak of every peer that reaches a steady state).
		pr=docs/results/prudence
		run prudence pairs --threads "$THREADS" --readers 0,1 --seconds 1 --repeat 3 \
			--out "$pr/pairs"
		run prudence endurance --threads 2 --readers 1 --seconds 60 --out "$pr/endurance"
		run prudence endurance --threads 2 --readers 1 --seconds 60 \
			--limit-mib "${PRUDENCE_LIMIT_MIB:-128}" --out "$pr/endurance-limit"
		# The ablation (Figs. 8-11's on vs off): ps-kmem with every policy, with none,
		# and with each one off in turn, interleaved, on the same endurance run.
		run prudence endurance --allocators ablation --threads 2 --readers 1 --seconds 20 \
			--repeat 3 --out "$pr/ablation"
		# The pairs with Prudence's policies on and off (the same ps_kmem front end).
		run prudence pairs --allocators ps-kmem,ps-kmem-off --threads "$THREADS" \
			--readers 0,1 --seconds 1 --repeat 3 --out "$pr/pairs-onoff"
		# Prudence on against off alone, longer: slab churn comes in bursts (a reader
		# descheduled inside its section), so it needs minutes to compare.
		run prudence endurance --allocators ps-kmem,ps-kmem-off --threads 2 --readers 1 \
			--seconds 60 --repeat 4 --out "$pr/onoff"
		# ps_kmem with a memory limit (max_bytes = 1.4 x the live set): bounded by waiting.
		run prudence endurance --allocators ps-kmem,ps-kmem-max --threads 2 --readers 1 \
			--seconds 60 --repeat 2 --out "$pr/bounded"
		# The pending bound (on by default) against none, 1 and 2 writers with the reader
		# pinned beside writer 0, then 2 writers with the reader left to the scheduler.
		run prudence endurance --allocators ps-kmem,ps-kmem-unbounded --threads 1,2 \
			--readers 1 --seconds 20 --out "$pr/bound"
		run prudence endurance --allocators ps-kmem,ps-kmem-unbounded --threads 2 \
			--readers 1 --seconds 20 --no-pin-readers --out "$pr/bound-unpinned"
		# glibc malloc + ps_call (tsync's call_rcu: ParSec's reclamation, no recycling)
		# against the glibc-malloc peers and tsync's allocators, 5 interleaved repeats at
		# 1 and 2 threads (issue 26: ps-call >= 2x malloc-call-rcu at 2 threads); then the
		# endurance run for ps-call's RSS over time. docs/prudence.md "Deferred callbacks".
		# Like every glibc-malloc design here, ps-call's RSS keeps the peak of what the
		# longest grace period left pending (1.4 GB in 60 s on 2 vCPUs; malloc-call-rcu
		# 3.5 GB): the unlimited endurance runs need a few GiB free.
		pc=docs/results/prudence-call
		run prudence pairs --allocators malloc-call-rcu,ck-epoch,ps-call,ps-call-free,ps-mem,ps-kmem \
			--sizes 64,256,4096 --threads 1,2 --readers 0,1 --seconds 1 --repeat 5 \
			--out "$pc/call-pairs"
		run prudence endurance --allocators malloc-call-rcu,ck-epoch,ps-call,ps-call-free,ps-kmem \
			--threads 2 --readers 1 --seconds 60 --out "$pc/call-endurance"
		# tsync-cached's core, 50 % sets, Prudence on and off, 3 interleaved repeats.
		mkdir -p "$pr/cache"
		rm -f "$pr/cache/mem.csv"
		for r in 1 2 3; do
			f=run
			((r == 1)) || f=again
			TSYNC_BENCH_OUT="$pr/cache" $f cache --variants ps --threads 2 --set-pct 50 \
				--seconds 10 --prudence on,off --mem-csv "$pr/cache/mem.csv" --csv /dev/null
		done
		for d in "$pr"/{pairs,endurance,endurance-limit,ablation,pairs-onoff,onoff,bounded,bound,bound-unpinned,cache} \
			"$pc"/{call-pairs,call-endurance}; do
			"$py" bench/prudence/plot_prudence.py "$d" --doc docs/prudence.md
		done
		echo "bench: docs/prudence.md figures refreshed"
		;;
	vmdb)
		# Every design on the model backend (synchronisation alone): 650 MB per thread
		# and round, 10 rounds, in the shared layout (every thread in one address
		# space: ParSec's Metis) and the private one. Then real memory (memfd: every
		# page mapped with mmap and written) for tsync's designs and Linux, the full
		# trace but 3 rounds (a round of 650 MB per thread takes seconds there), in both
		# layouts; each run's rows join the others' in vmdb.csv, and the plots and
		# table.md cover them all.
		run vmdb --backend model --layout shared --threads "$THREADS" \
			--out docs/results/vmdb
		again vmdb --backend model --layout private --threads "$THREADS" \
			--out docs/results/vmdb
		for layout in shared private; do
			again vmdb --backend memfd --layout "$layout" \
				--designs ps,rwlock,global-lock,frame-lock,frame-ticket,linux \
				--threads "$THREADS" --repeat 3 --out docs/results/vmdb
		done
		"$py" bench/vmdb/plot_vmdb.py docs/results/vmdb --doc docs/vmdb.md
		echo "bench: docs/vmdb.md targets refreshed"
		;;
	hash)
		run hash --threads 2 --updates 0,10,50 --keys 1000,65536,1048576 --seconds 1 \
			--repeat 3 --resize --out docs/results/hash
		"$py" bench/hash/plot_hash.py docs/results/hash --doc docs/hash.md
		echo "bench: docs/hash.md targets refreshed"
		;;
	*)
		echo "bench-suite: unknown suite '$suite' (smr rlu oplog cache net rt prudence vmdb hash)" >&2
		exit 2
		;;
	esac
done
