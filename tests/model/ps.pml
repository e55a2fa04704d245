/*
 * tests/model/ps.pml - ParSec parallel sections and ps_quiesce (GENERAL policy) as in
 * include/tsync/ps.h (ps_enter, ps_exit) and src/ps.c (ps_quiesce, the read barrier); the
 * argument is docs/design.md §1-2, the specification ParSec (EuroSys 2016) §3.2-3.3.
 *
 * Three read paths (include/tsync/ps.h, enum ps_read_path), one per build of the model:
 *   default    PS_READ_MEMBARRIER: ps_enter loads the domain clock word c (acquire) and
 *              stores its state word 2c+1 (release), with no fence and no counter read.
 *              A reclaimer trusts what it sees of a thread outside a section only after
 *              a read barrier: a counter reading n, the clock word raised to n, then
 *              membarrier(PRIVATE_EXPEDITED), which makes every running thread's earlier
 *              stores visible (here: the reader's store buffer is drained in one step);
 *              n is then the barrier's time, published for other reclaimers. A barrier
 *              serves a free time t only if n > t + S (it certainly began after t's
 *              unlink), or if the caller issued it itself after t.
 *   -DFENCE    PS_READ_FENCE (no membarrier in the kernel): ps_enter as above, then a
 *              seq_cst fence; a scan's loads are dated by a reading taken before them.
 *   -DTSC      PS_READ_COUNTER (the RT and TEMPORAL policies): ps_enter reads the counter
 *              instead of the clock word, then fences (implies -DFENCE).
 *   -DSWITCH   the membarrier path with its fence mode (src/ps.c, fence_on/fence_off),
 *              entered and left once by a switcher process: the readers' flag, loaded by
 *              ps_enter after its store, then a membarrier, then scans may date their
 *              loads by a reading taken before them (fready); leaving, scans stop first,
 *              then readers. Run with -DONE_OBJECT -DNSEC=1 (larger: over 10^8 states).
 *
 * Threads (ids as in the scan order of optimisation 4: a quiescer starts at its own id):
 *   0 reader   NSEC sections; in each: ps_enter, load the list head pointer, use the
 *              object it points to, ps_exit (store 2c: outside).
 *   1 writer   the ps_mem path: unlink object 0 (head := 1), stamp its free time t0
 *              (tsync_now_ordered: read after the unlink is visible), reclaim: reuse
 *              object 0 (ghost reused[0] := 1) only after ps_quiesce(t0) is true; then
 *              the same for object 1 (head := 2, t1).
 *   2 other    a registered thread that never enters a section of this ps (its state
 *              word stays 0): every scan reads it, and, like any thread seen outside,
 *              it needs a barrier before it is believed. With -DHELPER (slow: minutes)
 *              it is a second quiescer whose published point the writer may use
 *              (optimisation 2, peer's point).
 *   ticker     another reclaimer (σ, another thread's ps_free) issuing one read barrier
 *              at any moment: the writer may find it published and use it for a free
 *              time it covers (-DNO_TICKER leaves it out).
 * ps_quiesce(t) is modelled step by step: own published point; the newest barrier time b
 * and whether it covers t; a pass over the threads (cached view, valid when taken more
 * than S after t; peer's published point; the state word): a thread inside a section
 * begun by t + S makes the call fail (the clock word may then be raised, or not); inside
 * since after t is quiescent without a barrier; outside is quiescent only in a pass that
 * follows a covering barrier. A pass without one that met a thread outside issues a
 * barrier (or, lazily, gives up: ps_free's rate limit) and passes again. On success it
 * publishes max(min - S - 1, t - S - 1), min over the pass's date and the enter times
 * and view times it accepted. Records of every thread exist from the start.
 *
 * Clock: real time rt advances by one tick at any moment up to MAXT (a clock process);
 * every counter reading returns rt + d, d chosen anew in 0..SMAX at each reading (any
 * CPU: migration between readings included). So two readings differ from real time by
 * at most SMAX, the measured skew bound; the instance's bound is SKEW = SMAX + 1.
 *
 * Weak memory: the reader's stores (its state word) go through an explicit FIFO store
 * buffer (x86-TSO: a later load may be performed before an earlier store is visible),
 * drained one store at a time by a flusher at any moment; a fence waits until the buffer
 * is empty, and a membarrier drains it at once. Other threads load from memory. The
 * writer, the helper and the ticker are sequentially consistent: the writer's unlink is
 * followed by the seq_cst fence of tsync_now_ordered before its free time is read, and
 * published points, barrier times and the clock word are facts about the past whichever
 * moment they become visible.
 *
 * Safety property: the reader never uses an object that was reused (assert in the
 * reader at the use; reuse is the ghost reused[o] set by the writer after quiescence).
 *
 * Mutants (spin -DMUTANT_...), each a way to get the read path wrong that must be caught:
 *   MUTANT_NO_BARRIER         a pass believes threads seen outside without a barrier
 *                             before it: the reader's enter store waits in its buffer
 *                             while the section loads the pointer.
 *   MUTANT_LATE_ENTER         the reader publishes a time later than its section's true
 *                             start (the clock word + 2): "began after t" is believed
 *                             of a section that holds the object.
 *   MUTANT_STALE_BARRIER      a barrier is trusted for a free time it does not cover
 *                             (any barrier counts): a batch whose membarrier predates one
 *                             of its frees.
 *   MUTANT_NOW_AFTER_BARRIER  the barrier's time is read after the membarrier: a reader
 *                             that entered in between is not visible, yet is dated as
 *                             seen.
 *   MUTANT_BUMP               enter times made strictly increasing by prev + 1 when the
 *                             clock word has not moved (the old two-word protocol's
 *                             rule): they run ahead of real time (NSEC = 3 sections).
 *   MUTANT_NO_ENTER_FENCE     (-DFENCE) ps_enter without its fence where there is no
 *                             membarrier: the store buffer lets the pointer load pass it.
 *   MUTANT_NO_SKEW            the skew bound dropped from the comparisons (SKEW = 1).
 *   MUTANT_PUBLISH_T          publishing the raw t as a point: the writer's own point
 *                             answers a later free time read on a lagging CPU.
 *   MUTANT_FLAG_BEFORE_STORE  (-DSWITCH) ps_enter loads the fence flag before its store:
 *                             a reader that saw it clear enters unfenced after the
 *                             switch's membarrier and is not seen.
 *   MUTANT_READY_BEFORE_BARRIER (-DSWITCH) fence dating allowed before the switch's
 *                             membarrier: a section that missed the flag is not visible.
 *   MUTANT_FLAG_OFF_FIRST     (-DSWITCH) leaving the fence mode, readers stop fencing
 *                             before scans stop dating by readings.
 * (Not modelled: fence_dated reads its date before it loads fence_ready; the hazard of the
 * other order needs a second unlinking thread, which this model has not: docs/design.md
 * §2.6 argues it.)
 */

#ifndef SMAX
#define SMAX 1          /* measured skew bound S, ticks */
#endif
#ifndef MAXT
#define MAXT 4          /* real time runs 1..MAXT */
#endif
#ifdef MUTANT_NO_SKEW
#define SKEW 0
#else
#define SKEW (SMAX + 1)
#endif
#ifndef NSEC
#ifdef MUTANT_BUMP
#define NSEC 3          /* sections of the reader */
#else
#define NSEC 2
#endif
#endif
#if defined(TSC) && !defined(FENCE)
#define FENCE
#endif
#ifdef HELPER
#define NT 3            /* thread ids: 0 reader, 1 writer, 2 helper */
#else
#define NT 2            /* thread ids: 0 reader, 1 writer */
#endif

byte rt = 1;            /* real time (from 1: no reading is 0, the "no point" value) */
byte head;              /* the list head: object 0, then 1, then 2 */
bool reused[3];         /* ghost: the object's memory was handed out again */
byte clk = 1;           /* the domain clock word: a reading taken at ps_create */
byte bar;               /* the newest read barrier's time (0: none yet) */
bool rdflag;            /* -DSWITCH: the readers' fence flag (ps->head.read) */
bool fready;            /* -DSWITCH: scans may date by a reading (ps->fence_ready) */

/* per-thread records (memory): state word 2c+1 inside since c, 2c outside */
byte st[NT];
byte quiesced[NT];      /* published quiescence point */

/* the reader's FIFO store buffer of state-word values */
#define SBN (2 * NSEC)
byte sb_val[SBN];
byte sb_n;

/* a clock reading on any CPU: rt + d, 0 <= d <= SMAX */
inline read_clock(v) {
	atomic {
		if
		:: v = rt
		:: v = rt + 1
#if SMAX >= 2
		:: v = rt + 2
#endif
		fi
	}
}

/* commit the oldest buffered store to memory */
inline flush_one() {
	st[0] = sb_val[0];
	for (fli : 1 .. SBN - 1) {
		sb_val[fli - 1] = sb_val[fli]
	};
	sb_val[SBN - 1] = 0;
	fli = 0;
	sb_n--
}

byte fli;               /* flush_one's index (only used inside atomic steps) */

/* membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED): every running thread's earlier stores
 * become visible before it returns */
inline membarrier() {
	atomic {
		if :: sb_n > 0 -> flush_one() :: else fi;
		if :: sb_n > 0 -> flush_one() :: else fi;
		if :: sb_n > 0 -> flush_one() :: else fi;
		if :: sb_n > 0 -> flush_one() :: else fi;
#if SBN > 4
		if :: sb_n > 0 -> flush_one() :: else fi;
		if :: sb_n > 0 -> flush_one() :: else fi;
#endif
		assert(sb_n == 0)
	}
}

/* a read barrier (src/ps.c, barrier()): n := a reading taken before the membarrier; the
 * clock word is raised to it; the membarrier; n is published as the barrier's time */
inline read_barrier(n) {
#ifdef MUTANT_NOW_AFTER_BARRIER
	membarrier();
	read_clock(n);
	atomic { if :: n > clk -> clk = n :: else fi }
#else
	read_clock(n);
	atomic { if :: n > clk -> clk = n :: else fi };
#ifndef MUTANT_NO_BARRIER
	membarrier();
#endif
#endif
	atomic { if :: n > bar -> bar = n :: else fi }
}

active proctype clock() {
	do
	:: atomic { rt < MAXT -> rt++ }
	:: atomic { rt >= MAXT -> break }
	od
}

active proctype flusher() {
end:	do
	:: atomic { sb_n > 0 -> flush_one() }
	od
}

active proctype reader() {
	byte c, prev, o, k;
	bool fl;
	for (k : 1 .. NSEC) {
		/* ps_enter: the clock word (acquire), then the state word (release) */
#ifdef TSC
		read_clock(c);
#else
		c = clk;
#endif
#if defined(SWITCH) && defined(MUTANT_FLAG_BEFORE_STORE)
		fl = rdflag;
#endif
		atomic {
#ifdef MUTANT_LATE_ENTER
		c = c + 2;
#endif
#ifdef MUTANT_BUMP
		if
		:: c <= prev -> c = prev + 1
		:: else
		fi;
		prev = c;
#endif
		sb_val[sb_n] = 2 * c + 1; sb_n++
		};
#ifdef SWITCH
#ifndef MUTANT_FLAG_BEFORE_STORE
		fl = rdflag;        /* the flag, loaded after the store (program order) */
#endif
		if
		:: fl -> sb_n == 0  /* the fence mode's fence */
		:: else
		fi;
		fl = false;
#endif
#if defined(FENCE) && !defined(MUTANT_NO_ENTER_FENCE)
		sb_n == 0;          /* atomic_thread_fence(seq_cst): drain the buffer */
#endif
		/* the section: load the pointer, then use the object */
		o = head;
		/* use it; ps_exit: the state word says outside (release store: buffered) */
		atomic {
		assert(!reused[o]);
		sb_val[sb_n] = 2 * c; sb_n++;
		o = 0; c = 0
		}
	}
}

inline publish(me, q) {
	if
	:: q > quiesced[me] -> quiesced[me] = q
	:: else
	fi
}

/* One pass of ps_quiesce(t) over the threads, from the caller's own id. covered: the
 * pass's loads follow a barrier that serves t, whose time is b; otherwise a thread seen
 * outside sets need. Inside since c > t + S: quiescent, mn lowered to c. Inside since
 * earlier: done (the call fails), and the clock word may be raised (liveness). */
inline scan_pass(me, t, covered, b, mn, need, k, j, w, x, q, done, res) {
	k = 0;
	do
	:: done || k == NT -> break
	:: !done && k < NT ->
		/* one step: local view checks, then the peer point's load */
		atomic {
		j = (me + k) % NT;
		k++;
		x = 1;                          /* 1: read j's state word below */
		if
		:: j == me -> x = 0             /* own slot: never in a section here */
		:: j != me && vA[j] > t + SKEW && vW[j] % 2 == 0 ->
			if :: vA[j] < mn -> mn = vA[j] :: else fi;
			x = 0                   /* the view answers: outside at vA */
		:: j != me && vA[j] > t + SKEW && vW[j] % 2 == 1 && vW[j] / 2 > t + SKEW ->
			if :: vW[j] / 2 < mn -> mn = vW[j] / 2 :: else fi;
			x = 0                   /* inside since after t at vA */
		:: else ->
			if
			:: quiesced[j] >= t ->  /* peer's published point */
				q = quiesced[j];
				publish(me, q);
				res = true;
				done = true;
				x = 0
			:: else
			fi
		fi
		};
		if
		:: x == 1 ->
			atomic {
			w = st[j];              /* one load (acquire) */
			if
			:: covered -> vW[j] = w; vA[j] = b   /* a view, dated by the barrier */
			:: else
			fi;
			if
			:: w % 2 == 1 && w / 2 > t + SKEW ->    /* began after t */
				if :: w / 2 < mn -> mn = w / 2 :: else fi
			:: w % 2 == 1 && w / 2 <= t + SKEW ->   /* inside since by t + S: fail */
				done = true
			:: w % 2 == 0 && covered ->             /* outside, after the barrier */
				if :: b < mn -> mn = b :: else fi
			:: w % 2 == 0 && !covered ->            /* outside: believe after a barrier */
				need = true
			fi;
			w = 0; x = 0
			};
			/* a failed pass may raise the clock word, so that the next section of a
			 * thread that runs back-to-back sections begins "after t" */
			if
			:: done && !res -> read_clock(q); atomic { if :: q > clk -> clk = q :: else fi }; q = 0
			:: done && !res -> skip
			:: else
			fi
		:: else
		fi
	od
}

/* ps_quiesce(t) by thread me (src/ps.c, GENERAL); res := true / false. vW/vA (the
 * caller's arrays, by name): its cached views (optimisation 3), indexed by thread; the
 * other arguments are the caller's scratch variables. */
inline quiesce(me, t, res, now, b, mn, k, j, w, x, q, done, need, covered, fd) {
	res = false;
	done = false;
	need = false;
	if
	:: t <= quiesced[me] -> res = true; done = true     /* own published point */
	:: else ->
		read_clock(now);                /* tsync_now_before_loads */
#ifdef SWITCH
		fd = fready;                    /* fence_dated: loaded after the reading */
#endif
#ifdef FENCE
		/* readers fence: every pass's loads are dated by the reading before them */
		b = now;
		covered = true;
		mn = now;
#else
		if
		:: fd ->                        /* the fence mode: dated by the reading */
			b = now; covered = true; mn = now
		:: else ->
		b = bar;                        /* the newest barrier (acquire) */
#ifdef MUTANT_STALE_BARRIER
		covered = b > 0;
#else
		covered = b > t + SKEW;
#endif
		if :: covered -> mn = b :: else -> mn = now fi
		fi;
#endif
		scan_pass(me, t, covered, b, mn, need, k, j, w, x, q, done, res);
#ifndef FENCE
		if
		:: !done && need ->
			if
			:: skip ->              /* a read barrier, then pass again */
				read_barrier(b);
				covered = true;
				mn = b;
				need = false;
				scan_pass(me, t, covered, b, mn, need, k, j, w, x, q, done, res)
			:: skip ->              /* lazily: the rate limit says not yet */
				done = true
			fi
		:: else
		fi;
#endif
		atomic {
		if
		:: !done ->
			res = true;
			if
			:: mn > SKEW + 1 -> q = mn - SKEW - 1
			:: else -> q = 0
			fi;
#ifdef MUTANT_PUBLISH_T
			if :: q < t -> q = t :: else fi;       /* max(q, t): unsound */
#else
			if :: q + SKEW + 1 < t -> q = t - SKEW - 1 :: else fi;
#endif
			publish(me, q)
		:: else
		fi;
		now = 0; mn = 0; k = 0; j = 0; q = 0; b = 0; covered = false; need = false;
		fd = false
		}
	fi
}

active proctype writer() {
	byte t0, t1, vW[NT], vA[NT], now, b, mn, k, j, w, x, q;
	bool res, done, need, covered, fd;
	/* unlink, then stamp (tsync_now_ordered; a later stamp would only be safer) */
	atomic { head = 1; read_clock(t0) };
	do
	:: quiesce(1, t0, res, now, b, mn, k, j, w, x, q, done, need, covered, fd);
	   if :: res -> break :: else fi
	od;
	atomic { reused[0] = true; t0 = 0; res = false };
#ifndef ONE_OBJECT
	atomic { head = 2; read_clock(t1) };
	do
	:: quiesce(1, t1, res, now, b, mn, k, j, w, x, q, done, need, covered, fd);
	   if :: res -> break :: else fi
	od;
	reused[1] = true
#endif
}

#if defined(TICKER) && !defined(FENCE)
active proctype ticker() {
	byte n;
	read_barrier(n);
	n = 0
}
#endif

#if defined(SWITCH) && !defined(FENCE)
/* A PS_READ_MEMBARRIER instance's fence mode, entered and left once (src/ps.c, fence_on
 * and fence_off): the flag, a membarrier, then scans may date by readings; leaving,
 * scans stop first, then readers. */
active proctype switcher() {
#ifdef MUTANT_READY_BEFORE_BARRIER
	rdflag = true;
	fready = true;
	membarrier();
#else
	rdflag = true;
	membarrier();
	fready = true;
#endif
#ifdef MUTANT_FLAG_OFF_FIRST
	rdflag = false;
	fready = false
#else
	fready = false;
	rdflag = false
#endif
}
#endif

#ifdef HELPER
active proctype helper() {
	byte th, vW[NT], vA[NT], now, b, mn, k, j, w, x, q;
	bool res, done, need, covered, fd;
	read_clock(th);
	quiesce(2, th, res, now, b, mn, k, j, w, x, q, done, need, covered, fd)
}
#endif
