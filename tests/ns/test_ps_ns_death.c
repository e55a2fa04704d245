/*
 * tests/ns/test_ps_ns_death.c - <tsync/ps_ns.h>'s programming errors: bad frees and
 * publishes abort with a one-line diagnostic that names the call (fork-based death tests).
 */
#include "ps_ns_test.h"

/* ---- bad frees and publishes ---------------------------------------------------------- */
static void bad_call(void *arg)
{
	int kind = *(int *)arg;
	struct ps_ns *ns = ps_ns_create(PS, 32, NULL), *other = ps_ns_create(PS, 32, NULL);
	CHECK(ns && other);
	uint64_t id;
	void *o = ps_ns_alloc(ns, &id), *p = ps_ns_alloc(other, &id);
	CHECK(o && p);
	switch (kind) {
	case 0: /* double free of a published object */
		ps_ns_publish(ns, o);
		ps_ns_free(ns, o);
		ps_ns_free(ns, o);
		break;
	case 1: /* double free of a reserved object */
		ps_ns_free(ns, o);
		ps_ns_free(ns, o);
		break;
	case 2: /* an object of another namespace */
		ps_ns_publish(other, p);
		ps_ns_free(ns, p);
		break;
	case 3: /* a pointer no allocator handed out */ ps_ns_free(ns, malloc(64)); break;
	case 4: /* an object of a plain ps_mem */
	{
		struct ps_mem *m = ps_mem_create(PS, 32, NULL);
		ps_ns_free(ns, ps_alloc(m));
		break;
	}
	case 5: /* publish twice */
		ps_ns_publish(ns, o);
		ps_ns_publish(ns, o);
		break;
	case 6: /* publish after free */
		ps_enter(PS);
		ps_ns_free(ns, o);
		ps_ns_publish(ns, o);
		ps_exit(PS);
		break;
	case 7: /* publish an object of another namespace */ ps_ns_publish(ns, p); break;
	default: /* free after a publish, then publish again */
		ps_ns_publish(ns, o);
		ps_enter(PS);
		ps_ns_free(ns, o);
		ps_ns_publish(ns, o);
		ps_exit(PS);
		break;
	}
	_exit(0); /* not aborted: the test fails */
}

static void test_death(void)
{
	if (!test_can_fork())
		return;
	struct {
		const char *what;
		const char *want[3];
	} cases[] = {
		{"double free (published)", {"ps_ns_free", "double free", NULL}},
		{"double free (reserved)", {"ps_ns_free", "double free", NULL}},
		{"free of another namespace's object", {"ps_ns_free", NULL, NULL}},
		{"free of a malloc'd pointer", {"ps_ns_free", "ps_free", "AddressSanitizer"}},
		{"free of a ps_mem object", {"ps_ns_free", NULL, NULL}},
		{"publish twice", {"ps_ns_publish", NULL, NULL}},
		{"publish after free", {"ps_ns_publish", NULL, NULL}},
		{"publish of another namespace's object", {"ps_ns_publish", NULL, NULL}},
		{"publish after free of a published object", {"ps_ns_publish", NULL, NULL}},
	};
	for (int k = 0; k < (int)(sizeof cases / sizeof cases[0]); k++) {
		int nw = 0;
		while (nw < 3 && cases[k].want[nw])
			nw++;
		/* a double free must name the call (the namespace catches it, not only the
		 * allocator underneath after the id was released twice) */
		CHECK_MSG(test_dies_saying_any(bad_call, &k, cases[k].want, k <= 1 ? 1 : nw),
			  "%s did not abort with a diagnostic naming %s", cases[k].what,
			  cases[k].want[0]);
	}
}

TEST_CASES_MAIN(ps_ns_test_main, {"death", test_death})
