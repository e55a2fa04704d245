// tests/cxx/test_cxx_ps.cpp - tsync used from C++ (issue 26): the inline fast paths of the
// public headers, compiled as C++ through <tsync/atomic.h>, against the C library.
//
//  1. layout: every public struct's size, alignment and the offsets of the fields the
//     inlines touch, as this C++ TU sees them, equal the C table (layout.c);
//  2. the *_INIT macros initialise their structs from C++ and ps_create/ps_mem_create/...
//     accept the results;
//  3. premature-reuse hunt: std::threads read K slots of nodes from a ps_mem inside
//     ps_enter/ps_exit sections (C++'s inline ps_enter/ps_exit), taking two snapshots
//     of each node with a pause between; writers replace nodes under the node's ps_lock
//     (ps_lock_take, then ps_lock_release_free) and fill every node they allocate with
//     poison before its real contents. A reader that sees poison, a node of another
//     slot, or contents that change within its section has seen a node reused under
//     it: the failure ParSec (EuroSys 2016) §3.2 rules out. If C++'s ps_enter stored to
//     another place than the C reclaimer scans (layout, TLS), this is what fails;
//  4. ps_lock_lock/unlock as a mutex over a plain counter, ps_in_section's nesting, and
//     an OpLog counter (the inline oplog_log_acquire) summed over every thread.
//
// Usage: test_cxx_ps [seconds] (default TSYNC_STRESS_SECONDS, else 1).
#include "layout.h"

#include <tsync/tsync.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace
{

[[noreturn]] void fail(const std::string &what)
{
	std::fprintf(stderr, "FAIL test_cxx_ps: %s\n", what.c_str());
	std::fflush(stderr);
	std::_Exit(1);
}

#define REQUIRE(cond)                                                                            \
	do {                                                                                     \
		if (!(cond))                                                                     \
			fail(std::string(__FILE__ ":") + std::to_string(__LINE__) + ": " #cond); \
	} while (0)

// ---- 1. layout ---------------------------------------------------------------------------

size_t layout_cxx(tsync_cxx_layout_entry *out, size_t n)
{
	size_t i = 0;
	TSYNC_CXX_LAYOUT(TSYNC_CXX_LAYOUT_S_, TSYNC_CXX_LAYOUT_F_)
	return i;
}

void check_layout()
{
	std::array<tsync_cxx_layout_entry, 512> c{}, cxx{};
	size_t nc = tsync_cxx_layout_c(c.data(), c.size());
	size_t ncxx = layout_cxx(cxx.data(), cxx.size());
	REQUIRE(nc == ncxx && nc > 0 && nc < c.size());
	unsigned bad = 0;
	for (size_t i = 0; i < nc; i++) {
		REQUIRE(std::strcmp(c[i].what, cxx[i].what) == 0);
		if (c[i].value != cxx[i].value) {
			std::fprintf(stderr, "layout: %s is %zu in C, %zu in C++\n", c[i].what,
				     c[i].value, cxx[i].value);
			bad++;
		}
	}
	if (bad)
		fail(std::to_string(bad) + " layout differences between C and C++");
	std::printf("layout: %zu entries equal in C and C++\n", nc);
}

// ---- 2. the *_INIT macros ----------------------------------------------------------------

void check_inits()
{
	struct ps_config pc = PS_CONFIG_INIT;
	REQUIRE(pc.size == sizeof pc && pc.policy == PS_POLICY_GENERAL && pc.grace_ns == 0);
	struct ps_mem_config mc = PS_MEM_CONFIG_INIT;
	REQUIRE(mc.size == sizeof mc && mc.reclaim_mode == PS_MEM_RECLAIM_INLINE);
	struct ps_kmem_config kc = PS_KMEM_CONFIG_INIT;
	REQUIRE(kc.size == sizeof kc && kc.mem.size == sizeof(struct ps_mem_config));
	struct ps_ns_config nc = PS_NS_CONFIG_INIT;
	REQUIRE(nc.size == sizeof nc && nc.extent_policy == PS_NS_EXTENT_WHOLE);
	struct ps_reclaimer_config rc = PS_RECLAIMER_CONFIG_INIT;
	REQUIRE(rc.size == sizeof rc);
	struct rlu_config lc = RLU_CONFIG_INIT;
	REQUIRE(lc.size == sizeof lc);
	struct mvrlu_config vc = MVRLU_CONFIG_INIT;
	REQUIRE(vc.size == sizeof vc);
	struct oplog_config oc = OPLOG_CONFIG_INIT;
	REQUIRE(oc.size == sizeof oc);
	struct ps_lock lk = PS_LOCK_INIT;
	REQUIRE(atomic_load_explicit(&lk.next, memory_order_relaxed) == 0 &&
		atomic_load_explicit(&lk.owner, memory_order_relaxed) == 0);
	struct oplog_list_node ln = OPLOG_LIST_NODE_INIT;
	REQUIRE(ln.next == nullptr &&
		atomic_load_explicit(&ln.local, memory_order_relaxed) == nullptr);
	struct my_op {
		struct oplog_op op;
		int arg;
	};
	unsigned kind = 7; // not a constant: OPLOG_OP_INIT must not narrow
	struct my_op op = {OPLOG_OP_INIT(struct my_op, nullptr, kind), 3};
	REQUIRE(op.op.size == sizeof op && op.op.kind == 7 && op.arg == 3);

	// The library accepts what C++ built.
	struct ps *ps = ps_create(&pc);
	REQUIRE(ps != nullptr);
	struct ps_mem *m = ps_mem_create(ps, 64, &mc);
	REQUIRE(m != nullptr);
	ps_mem_destroy(m);
	struct ps_kmem *k = ps_kmem_create(ps, &kc);
	REQUIRE(k != nullptr);
	ps_kmem_destroy(k);
	struct ps_ns *ns = ps_ns_create(ps, 64, &nc);
	REQUIRE(ns != nullptr);
	REQUIRE(ps_ns_lookup(ns, 5) == nullptr); // the inline lookup, from C++
	ps_ns_destroy(ns);
	ps_destroy(ps);
	struct rlu *r = rlu_create(&lc);
	REQUIRE(r != nullptr);
	rlu_destroy(r);
	std::printf("init macros: accepted\n");
}

// ---- 3. premature-reuse hunt ------------------------------------------------------------

constexpr uint64_t kLive = 0x11fe11fe11fe11feull;
constexpr uint64_t kPoison = 0xdeaddeaddeaddeadull;
constexpr unsigned kSlots = 4;

struct Node {
	struct ps_lock lock; // ps_lock_take's lock lives in the node (ParSec Fig. 1)
	uint64_t magic;      // kLive once initialised; kPoison while being (re)filled
	uint64_t slot;       // the slot it was published in
	uint64_t version;    // the writer's counter
	uint64_t check;      // a function of the three above
};
// Nodes are reused only after a grace period and never destroyed: no destructor to run.
static_assert(std::is_trivially_destructible_v<Node>);

uint64_t check_of(uint64_t magic, uint64_t slot, uint64_t version)
{
	return (magic ^ (slot * 0x9e3779b97f4a7c15ull)) + version * 0xff51afd7ed558ccdull;
}

struct Snapshot {
	uint64_t magic, slot, version, check;
	bool operator==(const Snapshot &o) const
	{
		return magic == o.magic && slot == o.slot && version == o.version &&
		       check == o.check;
	}
};

// Reads the node the way a racing reuse would be seen: volatile, so the two snapshots of
// a section are two sets of loads.
Snapshot snap(const Node *n)
{
	const volatile Node *v = n;
	return Snapshot{v->magic, v->slot, v->version, v->check};
}

struct Shared {
	struct ps *ps = nullptr;
	struct ps_mem *mem = nullptr;
	std::array<std::atomic<Node *>, kSlots> slots{};
	std::atomic<bool> stop{false};
	std::atomic<uint64_t> reads{0}, replaces{0}, violations{0};
};

Node *make_node(Shared &sh, uint64_t slot, uint64_t version)
{
	void *p = ps_alloc(sh.mem);
	REQUIRE(p != nullptr);
	// Poison first: a reader still holding this memory from its previous life sees it.
	auto *n = static_cast<Node *>(p);
	volatile uint64_t *w = &n->magic;
	w[0] = kPoison;
	w[1] = ~0ull;
	w[2] = ~0ull;
	w[3] = kPoison;
	std::atomic_signal_fence(std::memory_order_seq_cst);
	for (int i = 0; i < 16; i++)
		tsync_arch_relax();
	n = new (p) Node{PS_LOCK_INIT, kLive, slot, version, check_of(kLive, slot, version)};
	return n;
}

void report(Shared &sh, const char *what, unsigned slot, const Snapshot &a, const Snapshot &b)
{
	if (sh.violations.fetch_add(1) < 5)
		std::fprintf(stderr,
			     "violation (%s) in slot %u: first magic %" PRIx64 " slot %" PRIu64
			     " version %" PRIu64 ", then magic %" PRIx64 " slot %" PRIu64
			     " version %" PRIu64 "\n",
			     what, slot, a.magic, a.slot, a.version, b.magic, b.slot, b.version);
	sh.stop.store(true);
}

void reader(Shared &sh, unsigned id)
{
	uint64_t x = 0x2545f4914f6cdd1dull * (id + 1);
	uint64_t reads = 0;
	while (!sh.stop.load(std::memory_order_relaxed)) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		unsigned s = static_cast<unsigned>(x % kSlots);
		ps_enter(sh.ps);
		REQUIRE(ps_in_section(sh.ps));
		const Node *n = sh.slots[s].load(std::memory_order_acquire);
		Snapshot a = snap(n);
		for (unsigned i = 0; i < (x >> 60); i++) // hold the section a little
			tsync_arch_relax();
		Snapshot b = snap(n);
		ps_exit(sh.ps);
		if (a.magic != kLive || a.slot != s ||
		    a.check != check_of(a.magic, a.slot, a.version))
			report(sh, "not a live node of this slot", s, a, b);
		else if (!(a == b))
			report(sh, "changed inside the section", s, a, b);
		reads++;
	}
	REQUIRE(!ps_in_section(sh.ps));
	sh.reads.fetch_add(reads);
}

void writer(Shared &sh, unsigned id)
{
	uint64_t x = 0x9e3779b97f4a7c15ull * (id + 7);
	uint64_t replaces = 0, version = uint64_t{id} << 40;
	while (!sh.stop.load(std::memory_order_relaxed)) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		unsigned s = static_cast<unsigned>(x % kSlots);
		ps_enter(sh.ps);
		Node *old = sh.slots[s].load(std::memory_order_acquire);
		// The node's lock fails once the node was freed (replaced by another writer).
		if (ps_lock_take(old, &old->lock)) {
			REQUIRE(old->magic == kLive && old->slot == s);
			Node *n = make_node(sh, s, ++version);
			sh.slots[s].store(n, std::memory_order_release);
			ps_lock_release_free(old, &old->lock);
			replaces++;
		} else {
			REQUIRE(ps_lock_is_freed(old));
		}
		ps_exit(sh.ps);
	}
	sh.replaces.fetch_add(replaces);
}

void hunt(double seconds, unsigned readers, unsigned writers)
{
	Shared sh;
	struct ps_config pc = PS_CONFIG_INIT;
	sh.ps = ps_create(&pc);
	REQUIRE(sh.ps != nullptr);
	// Small caches and batches: objects come back through reclamation often.
	struct ps_mem_config mc = PS_MEM_CONFIG_INIT;
	mc.cache_size = 2;
	mc.reclaim_batch = 2;
	mc.stamp_batch = 1;
	sh.mem = ps_mem_create(sh.ps, sizeof(Node), &mc);
	REQUIRE(sh.mem != nullptr);
	for (unsigned s = 0; s < kSlots; s++)
		sh.slots[s].store(make_node(sh, s, 0));

	std::vector<std::thread> threads;
	for (unsigned i = 0; i < readers; i++)
		threads.emplace_back(reader, std::ref(sh), i);
	for (unsigned i = 0; i < writers; i++)
		threads.emplace_back(writer, std::ref(sh), i);
	auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
	while (!sh.stop.load() && std::chrono::steady_clock::now() < end)
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
	sh.stop.store(true);
	for (auto &t : threads)
		t.join();

	struct ps_mem_stats st;
	REQUIRE(ps_mem_stats(sh.mem, &st) == 0);
	std::printf("hunt: %u readers, %u writers, %.1f s: %" PRIu64 " reads, %" PRIu64
		    " replacements, %" PRIu64 " violations\n",
		    readers, writers, seconds, sh.reads.load(), sh.replaces.load(),
		    sh.violations.load());
	if (sh.violations.load() != 0)
		fail("a reader saw a node reused inside its section");
	// The hunt hunted: nodes were replaced and their memory went round.
	REQUIRE(sh.reads.load() > 0 && sh.replaces.load() > 0);
	for (unsigned s = 0; s < kSlots; s++)
		ps_free(sh.mem, sh.slots[s].load());
	ps_mem_destroy(sh.mem);
	ps_destroy(sh.ps);
}

// ---- 4. ps_lock as a mutex, nesting, an OpLog counter ------------------------------------

void check_lock_and_counter(unsigned nthreads)
{
	struct ps_lock lock;
	ps_lock_init(&lock);
	uint64_t plain = 0; // guarded by lock only
	struct oplog_config oc = OPLOG_CONFIG_INIT;
	struct oplog_domain *d = oplog_counter_domain_create(&oc);
	REQUIRE(d != nullptr);
	struct oplog_counter c;
	REQUIRE(oplog_counter_init(&c, d, 100, nullptr, nullptr) == 0);
	struct ps *ps = ps_create(nullptr);
	REQUIRE(ps != nullptr);

	constexpr unsigned kIters = 20000;
	std::vector<std::thread> threads;
	for (unsigned t = 0; t < nthreads; t++)
		threads.emplace_back([&, t] {
			REQUIRE(tsync_thread_register() == 0);
			for (unsigned i = 0; i < kIters; i++) {
				ps_lock_lock(&lock);
				plain++;
				ps_lock_unlock(&lock);
				REQUIRE(oplog_counter_add(&c, (t & 1) ? 3 : -1) == 0);
				if (i % 1000 == 0) {
					ps_enter(ps);
					ps_enter(ps);
					ps_exit(ps);
					REQUIRE(ps_in_section(ps));
					ps_exit(ps);
					REQUIRE(!ps_in_section(ps));
					(void)oplog_counter_read(
						&c); // a synchronize beside the adds
				}
			}
			REQUIRE(tsync_thread_unregister() == 0);
		});
	for (auto &th : threads)
		th.join();
	REQUIRE(plain == uint64_t{nthreads} * kIters);
	int64_t want = 100;
	for (unsigned t = 0; t < nthreads; t++)
		want += int64_t{kIters} * ((t & 1) ? 3 : -1);
	int64_t got = oplog_counter_read(&c);
	if (got != want)
		fail("oplog counter: " + std::to_string(got) + ", want " + std::to_string(want));
	oplog_counter_fini(&c);
	oplog_domain_destroy(d);
	ps_destroy(ps);
	std::printf("ps_lock: %" PRIu64 " increments exact; oplog counter %" PRId64 " exact\n",
		    plain, got);
}

} // namespace

int main(int argc, char **argv)
{
	double seconds = 1.0;
	if (const char *e = std::getenv("TSYNC_STRESS_SECONDS"))
		seconds = std::atof(e);
	if (argc > 1)
		seconds = std::atof(argv[1]);
	if (!(seconds > 0))
		seconds = 1.0;
	std::printf("C++ %ld, tsync %s\n", static_cast<long>(__cplusplus), TSYNC_VERSION_STRING);
	check_layout();
	check_inits();
	check_lock_and_counter(4);
	hunt(seconds, 3, 2);
	std::printf("PASS\n");
	return 0;
}
