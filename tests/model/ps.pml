/*
 * tests/model/ps.pml - ParSec parallel sections and ps_quiesce (GENERAL policy) as in
 * include/tsync/ps.h (ps_enter, ps_exit) and src/ps.c (ps_quiesce); the argument is
 * docs/design.md §1-2, the specification ParSec (EuroSys 2016) §3.2-3.3.
 *
 * Threads (ids as in the scan order of optimisation 4: a quiescer starts at its own id):
 *   0 reader   two sections; in each: ps_enter (clock read, strictly increasing enter
 *              time, store enter, seq_cst fence), load the list head pointer, use the
 *              object it points to, ps_exit (store exit = enter + 1).
 *   1 writer   the ps_mem path: unlink object 0 (head := 1), stamp its free time t0
 *              (tsync_now_ordered: read after the unlink is visible), reclaim: reuse
 *              object 0 (ghost reused[0] := 1) only after ps_quiesce(t0) is true; then
 *              the same for object 1 (head := 2, t1). With -DBOTH_FIRST both unlinks
 *              come before the first reclamation (a queue of two).
 *   2 helper   with -DHELPER only (about 10x the states: too slow for ctest): a second
 *              quiescer, ps_quiesce(now) once, whose published point the writer may use
 *              (optimisation 2, peer's point). Without it slot 2 is a registered thread
 *              that never enters a section: the writer still scans it and caches its
 *              view, so optimisation 3's cache hits are exercised.
 * ps_quiesce is modelled step by step: own published point; scan start `now` read
 * before the loads; per thread: cached view (optimisation 3, valid when taken more
 * than S after t), peer's published point (optimisation 2), load exit then enter (two
 * separate steps, so a thread may leave and re-enter between them), store the view,
 * outside / began after t + S / fail; on success publish max(min - S - 1, t).
 * Records of every thread exist from the start (reason 5 of design.md §2, "no record",
 * is not modelled).
 *
 * Clock: real time rt advances by one tick at any moment up to MAXT (a clock process);
 * every clock reading of every thread returns rt + d, d chosen anew in 0..SMAX at each
 * reading (any CPU: migration between readings included). So two readings differ from
 * real time by at most SMAX, the measured skew bound; the instance's bound is
 * SKEW = SMAX + 1 (ps->skew = tsync_clock_skew() + skew_margin + 1, src/ps.c).
 *
 * Weak memory: the reader's stores (enter, exit) go through an explicit FIFO store
 * buffer (x86-TSO: a later load may be performed before an earlier store is visible),
 * drained one store at a time by a flusher at any moment; the fence in ps_enter waits
 * until the buffer is empty. Other threads load from memory, the reader from its own
 * buffer first (forwarding). The writer and the helper are sequentially consistent:
 * the writer's unlink is followed by the seq_cst fence of tsync_now_ordered before
 * its free time is read, and their published points are facts about the past whichever
 * moment they become visible. Loads are acquire, stores release (x86-TSO, and
 * design.md §2 for the C11 edges), so the buffer is the only reordering that matters.
 *
 * Safety property: the reader never uses an object that was reused (assert in the
 * reader at the use; reuse is the ghost reused[o] set by the writer after quiescence).
 *
 * Published points: a successful scan publishes max(min - S - 1, t - S - 1). src/ps.c
 * publishes max(min - S - 1, t): the raw t is not a quiescence point under skew. It
 * states that every section active at the real time t was read has ended, but a later
 * ps_quiesce(t') compares t' <= point as numbers, and a free time t' read after t on a
 * CPU whose counter lags (by up to S) can be <= t although the unlink it follows came
 * after a section that began after t's scan (MUTANT_PUBLISH_T finds that trace).
 *
 * Mutants (spin -DMUTANT_...):
 *   MUTANT_PUBLISH_T       publish max(min - S - 1, t) as src/ps.c does today: the
 *                          writer's own point answers a later free time read on a
 *                          lagging CPU while the reader still holds the object.
 *   MUTANT_NO_ENTER_FENCE  ps_enter without its seq_cst fence: the enter store can sit
 *                          in the store buffer while the section loads the pointer, so
 *                          a scan sees the reader outside and the object is reused
 *                          under it. The C tests cannot see this on x86 (TSO reorders
 *                          the store after the load only for a few cycles).
 *   MUTANT_NO_SKEW         the skew bound dropped from the comparisons (SKEW = 1, the
 *                          strict-increase tick only): an enter time read on a CPU
 *                          whose counter runs ahead looks "after t" although the
 *                          section began before the unlink.
 */

#ifndef SMAX
#define SMAX 1          /* measured skew bound S, ticks */
#endif
#ifndef MAXT
#define MAXT 4          /* real time runs 1..MAXT */
#endif
#ifdef MUTANT_NO_SKEW
#define SKEW 1
#else
#define SKEW (SMAX + 1)
#endif
#define NT 3            /* threads: 0 reader, 1 writer, 2 helper */

byte rt = 1;            /* real time (from 1: no reading is 0, the "no point" value) */
byte head;              /* the list head: object 0, then 1, then 2 */
bool reused[3];         /* ghost: the object's memory was handed out again */

/* per-thread records (memory) */
byte enter[NT];
byte ex[NT] = 1;        /* exit: 1 = outside (slot_chunk_init) */
byte quiesced[NT];      /* published quiescence point */

/* the reader's FIFO store buffer: entries (which: 0 enter / 1 exit, value) */
#define SBN 4           /* two sections x (enter, exit): enough without the fence */
byte sb_which[SBN];
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

active proctype clock() {
	do
	:: atomic { rt < MAXT -> rt++ }
	:: atomic { rt >= MAXT -> break }
	od
}

active proctype flusher() {
end:	do
	:: atomic {
		sb_n > 0 ->
		if
		:: sb_which[0] == 0 -> enter[0] = sb_val[0]
		:: else -> ex[0] = sb_val[0]
		fi;
		byte i;
		for (i : 1 .. SBN - 1) {
			sb_which[i - 1] = sb_which[i]; sb_val[i - 1] = sb_val[i]
		};
		sb_which[SBN - 1] = 0; sb_val[SBN - 1] = 0;
		i = 0;
		sb_n--
	   }
	od
}

active proctype reader() {
	byte e, prev, o, k;
	for (k : 1 .. 2) {
		/* ps_enter (prev: the owner's last enter store, which it reads back itself) */
		/* one step: a counter reading taken earlier would only be smaller (safer) */
		atomic {
		read_clock(e);
		if
		:: e <= prev -> e = prev + 1
		:: else
		fi;
		prev = e;
		sb_which[sb_n] = 0; sb_val[sb_n] = e; sb_n++
		};
#ifndef MUTANT_NO_ENTER_FENCE
		sb_n == 0;          /* atomic_thread_fence(seq_cst): drain the buffer */
#endif
		/* the section: load the pointer, then use the object */
		o = head;
		/* use it; ps_exit: exit = enter + 1 (release store: through the buffer) */
		atomic {
		assert(!reused[o]);
		sb_which[sb_n] = 1; sb_val[sb_n] = e + 1; sb_n++;
		o = 0
		}
	}
}

inline publish(me, q) {
	if
	:: q > quiesced[me] -> quiesced[me] = q
	:: else
	fi
}

/* ps_quiesce(t) by thread me (src/ps.c, GENERAL); res := true / false.
 * vE/vX/vA (the caller's arrays, by name): its cached views (optimisation 3), indexed by
 * thread; the other arguments
 * are the caller's scratch variables. */
inline quiesce(me, t, res, now, mn, k, j, x, e, q, done) {
	res = false;
	done = false;
	if
	:: t <= quiesced[me] -> res = true; done = true     /* own published point */
	:: else ->
		read_clock(now);                /* tsync_now_before_loads */
		mn = now;
		k = 0;
		do
		:: done || k == NT -> break
		:: !done && k < NT ->
			/* one step: local view checks, then the peer point's load */
			atomic {
			j = (me + k) % NT;
			k++;
			x = 1;                          /* 1: read j's record below */
			if
			:: j != me && vA[j] > t + SKEW && vX[j] > vE[j] ->
				if :: vA[j] < mn -> mn = vA[j] :: else fi;
				x = 0                   /* the view answers */
			:: j != me && vA[j] > t + SKEW && vX[j] <= vE[j] && vE[j] > t + SKEW ->
				if :: vE[j] < mn -> mn = vE[j] :: else fi;
				x = 0
			:: else ->
				if
				:: j != me && quiesced[j] >= t ->      /* peer's published point */
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
			:: x == 1 && j == me -> x = 0   /* own slot: never in a section here */
			:: x == 1 && j != me ->
				x = ex[j];              /* exit first, */
				atomic {
				e = enter[j];           /* then enter (a separate load) */
				if
				:: j != me -> vE[j] = e; vX[j] = x; vA[j] = now
				:: else
				fi;
				if
				:: x > e -> skip                /* outside after now */
				:: x <= e && e > t + SKEW ->    /* began after t */
					if :: e < mn -> mn = e :: else fi
				:: else -> done = true          /* inside since before t: false */
				fi;
				x = 0; e = 0
				}
			:: else
			fi
		od;
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
		now = 0; mn = 0; k = 0; j = 0; q = 0
		}
	fi
}

active proctype writer() {
	byte t0, t1, vE[NT], vX[NT], vA[NT], now, mn, k, j, x, e, q;
	bool res, done, second = false;
	/* unlink 0, stamp (after the unlink: tsync_now_ordered) */
	/* unlink, then stamp (tsync_now_ordered; a later stamp would only be safer) */
	atomic { head = 1; read_clock(t0) };
#ifdef BOTH_FIRST
	head = 2; read_clock(t1); second = true;
#endif
	do
	:: quiesce(1, t0, res, now, mn, k, j, x, e, q, done); if :: res -> break :: else fi
	od;
	reused[0] = true;
	if
	:: !second -> atomic { head = 2; read_clock(t1) }
	:: else
	fi;
	do
	:: quiesce(1, t1, res, now, mn, k, j, x, e, q, done); if :: res -> break :: else fi
	od;
	reused[1] = true
}

#ifdef HELPER
active proctype helper() {
	byte th, vE[NT], vX[NT], vA[NT], now, mn, k, j, x, e, q;
	bool res, done;
	read_clock(th);
	quiesce(2, th, res, now, mn, k, j, x, e, q, done)
}
#endif
