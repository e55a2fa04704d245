/*
 * tests/model/rlu.pml - RLU commit, grace period and write-back of src/rlu.c
 * (rlu_reader_lock, rlu_reader_unlock's commit, sync_now, wait_for_readers,
 * rlu__deref_slow; docs/rlu.md §2; the RLU study (Appl. Sci. 2022) §3.2).
 *
 * Threads:
 *   writer    three write sections on one object X of two words (a, b), each writing
 *             the values (k, k): lock X (copy the original into its log slot of
 *             generation g, CAS X.copy to the slot), write the copy, commit (g_unsynced
 *             + 1, clock word COMMITTING, v = ++g_clock, clock word v), then sync_now at
 *             once (wait_for_readers(v), write back a then b, unlock X.copy, clock word
 *             INF, g_unsynced - 1) and switch generation. Sections 1 and 3 use
 *             generation 0's log slot: the third reuses the memory the first published.
 *   readers   two, each two sections: rlu_reader_lock (run_counter odd, fence, local =
 *             g_clock, local_clock store, deref_fast = (g_unsynced == 0)), deref X
 *             (original on the fast path; else load X.copy, wait while its clock word
 *             is COMMITTING, the copy if word <= local, else the original), read a,
 *             read b (separate loads), end (run_counter even).
 * Values are abstract: a copy slot holds (a, b) plus a ghost epoch counting its reuses.
 * Log recycling, write sets of several objects, aborts, frees and sync requests are not
 * modelled (one object per write set, the writer syncs after each commit).
 *
 * Memory: sequentially consistent. The code's Dekker pairs are seq_cst (reader: the
 * run_counter store, a seq_cst fence, the g_clock load; writer: the seq_cst
 * COMMITTING store and g_clock increment, then the run_counter loads) and the rest is
 * release/acquire on the words read (X.copy, clock words, run_counter), so every
 * outcome C11 allows for these accesses is one of SC's interleavings. Clocks are the
 * logical g_clock only (no time-stamp counter).
 *
 * Safety properties, asserted by the reader after its two loads:
 *   - a == b: a reader never sees a half-written-back object (nor a copy half
 *     initialised or overwritten);
 *   - the copy's epoch did not change while it read it: a reader never reads a log slot
 *     after the writer reused it.
 *
 * Mutants:
 *   MUTANT_WRITEBACK_BEFORE_WAIT  sync_now writes back (and unlocks) before
 *                                 wait_for_readers: a reader with an older local clock
 *                                 reading the original sees a torn object.
 *   MUTANT_CLOCK_AFTER_SYNC       the commit waits for readers before it increments
 *                                 g_clock: a reader that starts in between takes the
 *                                 old clock, is not waited for, and reads the original
 *                                 while it is written back.
 */

#define INF 255
#define COMMITTING 254
#define NR 2            /* readers */

byte g_clock;
byte g_unsynced;
byte xa, xb;            /* X's two words */
byte xcopy;             /* X.copy: 0 = unlocked, g + 1 = the writer's slot of gen g */
byte la[2], lb[2];      /* the writer's log slots (the copies), per generation */
byte lepoch[2];         /* ghost: how often each slot was (re)used */
byte wclk[2] = INF;     /* clock word of each generation's write set */
byte run_counter[NR];
byte local_clock[NR];

/* wait_for_readers(wc): for each reader in a section begun with a clock < wc, wait
 * until that section ends (src/rlu.c). */
inline wait_for_readers(wc, j, rc) {
	for (j : 0 .. NR - 1) {
		rc = run_counter[j];
		if
		:: rc % 2 == 0 -> skip
		:: else ->
			if
			:: local_clock[j] >= wc && run_counter[j] == rc -> skip
			:: else -> run_counter[j] != rc
			fi
		fi
	};
	j = 0; rc = 0
}

inline write_back(g) {
	xa = la[g];
	xb = lb[g];
	xcopy = 0               /* unlock */
}

active proctype writer() {
	byte k, g, v, j, rc;
	for (k : 1 .. 3) {
		/* rlu_try_lock: copy the original into the slot, publish it */
		atomic { lepoch[g]++; la[g] = xa };
		lb[g] = xb;
		xcopy = g + 1;
		/* write the copy (not visible: the clock word is INF) */
		la[g] = k;
		lb[g] = k;
		/* commit (rlu_reader_unlock) */
		g_unsynced++;
#ifdef MUTANT_CLOCK_AFTER_SYNC
		wait_for_readers(g_clock + 1, j, rc);
		wclk[g] = COMMITTING;
		atomic { g_clock++; v = g_clock };
		wclk[g] = v;
#else
		wclk[g] = COMMITTING;
		atomic { g_clock++; v = g_clock };
		wclk[g] = v;
#endif
		/* sync_now */
#ifdef MUTANT_WRITEBACK_BEFORE_WAIT
		write_back(g);
		wait_for_readers(v, j, rc);
#else
#ifndef MUTANT_CLOCK_AFTER_SYNC
		wait_for_readers(v, j, rc);
#endif
		write_back(g);
#endif
		wclk[g] = INF;
		g_unsynced--;
		g = 1 - g
	}
}

proctype reader(byte id) {
	byte k, lc, c, w, a, b, ep;
	bool fast;
	for (k : 1 .. 2) {
		/* rlu_reader_lock */
		run_counter[id]++;      /* odd; then the seq_cst fence */
		lc = g_clock;
		local_clock[id] = lc;
		fast = (g_unsynced == 0);
		/* rlu_deref(X) */
		if
		:: fast -> c = 0
		:: else ->
			c = xcopy;
			if
			:: c != 0 ->
				w = wclk[c - 1];
				do
				:: w == COMMITTING -> w = wclk[c - 1]
				:: else -> break
				od;
				if
				:: w > lc -> c = 0   /* not ours to see: the original */
				:: else
				fi
			:: else
			fi
		fi;
		/* read the two words */
		if
		:: c == 0 -> a = xa
		:: else -> atomic { ep = lepoch[c - 1]; a = la[c - 1] }
		fi;
		if
		:: c == 0 -> b = xb
		:: else -> atomic { b = lb[c - 1]; assert(ep == lepoch[c - 1]) }
		fi;
		assert(a == b);
		/* rlu_reader_unlock */
		run_counter[id]++;
		c = 0; w = 0; a = 0; b = 0; ep = 0; fast = false
	}
}

init {
	atomic {
		byte i;
		for (i : 0 .. NR - 1) {
			run reader(i)
		}
	}
}
