/*
 * tests/model/ps_lock.pml - node locks that fail on freed nodes: ps_lock_take,
 * ps_lock_release and ps_lock_release_free of src/ps_lock.c (docs/design.md §4;
 * ParSec (EuroSys 2016) §2.2 and §3.5, Fig. 1).
 *
 * Threads: three, each looks the node up (it is reachable until a deleter unlinks it),
 * takes the node's ticket lock with ps_lock_take - fetch-and-add on `next`, wait until
 * `owner` equals the ticket, then load the freed mark and, if set, release and fail -
 * and then either modifies the node and releases (ps_lock_release), or deletes it:
 * unlink, ps_lock_release_free (store the mark, release the lock: owner + 1, then
 * ps_free, the ghost `freed`). Which thread modifies and which deletes is left open, so
 * two deleters can race too.
 *
 * What is abstracted: the memory of the node stays valid to every thread that reached
 * it (design.md §2-3: the lookup is inside a parallel section, so ps_free's reuse waits
 * for it); reclamation itself is not modelled, only the moment ps_free is called.
 * Clocks play no part. Memory: sequentially consistent. In the code the mark is a
 * relaxed store followed in program order by the release store of `owner`, and the next
 * holder's acquire load of `owner` (in its wait) precedes its load of the mark, so the
 * mark is visible to it whenever the release is: the C11 order the code relies on is
 * the program order SC keeps. The mutant moves the store in program order, which SC
 * still shows.
 *
 * Safety property: nobody modifies (or deletes again) a node after it was freed:
 * assert(!freed) at each modification and at the deleter's unlink.
 *
 * Mutant (spin -DMUTANT_RELEASE_BEFORE_MARK): ps_lock_release_free releases the lock
 * before it stores the mark: a waiter that takes the lock in between reads no mark and
 * modifies the node the deleter is about to free.
 */

#define NTH 3

byte next;              /* ticket lock: next ticket */
byte owner;             /*              ticket now served */
bool linked = true;     /* the node is reachable from the structure */
bool marked;            /* header's freed mark (free_tsc != 0) */
bool freed;             /* ghost: ps_free was called on the node */
byte value;             /* the node's contents */

inline release() {
	owner = owner + 1
}

proctype worker(byte id) {
	byte ticket;
	/* lookup (inside a section) */
	if
	:: linked -> skip
	:: else -> goto out
	fi;
	/* ps_lock_take */
	atomic { ticket = next; next = next + 1 };
	owner == ticket;
	if
	:: marked -> release(); goto out       /* freed: fail */
	:: else
	fi;
	/* holding the lock on a live node */
	if
	:: assert(!freed); value = value + 1; release()     /* modify, ps_lock_release */
	:: assert(!freed); linked = false;                  /* delete: unlink, */
#ifdef MUTANT_RELEASE_BEFORE_MARK
	   release(); marked = true;
#else
	   marked = true; release();                        /* mark, release, */
#endif
	   freed = true                                     /* ps_free */
	fi;
out:	skip
}

init {
	atomic {
		byte i;
		for (i : 1 .. NTH) {
			run worker(i)
		}
	}
}
