// examples/cxx_map.cpp - a read-mostly hash map in C++17 over tsync (ParSec sections and
// ps_mem objects), from <tsync/tsync.h>.
//
// Readers look keys up with no lock and no store to any shared line: a ps::Section (RAII
// ps_enter/ps_exit) brackets each lookup. Writers serialise on a mutex, build a new node
// for every insert or update (copy on write), publish it with a release store and hand the
// old one to ps_free: ps_alloc gives that memory out again only after every section that
// could still see it has ended, so a reader never sees a node change under it. Every node
// carries check = f(key, value); a reader that found a torn or foreign node would abort.
//
// tsync is a C library; its headers compile as C++17 and later (<tsync/atomic.h> maps
// their atomics to std::atomic, with the same layout as the library's C). Build against
// an installed tsync: examples/CMakeLists.txt or examples/Makefile.pkgconfig. Prints one
// line and exits 0 when the final map is exactly what the writer made.
#include <tsync/tsync.h>

#include <array>
#include <atomic>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <vector>

namespace
{

void check(bool ok, const char *what)
{
	if (!ok) {
		std::fprintf(stderr, "cxx_map: check failed: %s\n", what);
		std::abort();
	}
}

// ---- thin RAII over the C API -------------------------------------------------------------

struct PsDeleter {
	void operator()(struct ps *p) const
	{
		ps_destroy(p);
	}
};
struct PsMemDeleter {
	void operator()(struct ps_mem *m) const
	{
		ps_mem_destroy(m);
	}
};
using PsPtr = std::unique_ptr<struct ps, PsDeleter>;
using PsMemPtr = std::unique_ptr<struct ps_mem, PsMemDeleter>;

// A parallel section: while one is alive, nothing reachable at its start is reused.
class Section
{
      public:
	explicit Section(struct ps *ps) : ps_(ps)
	{
		ps_enter(ps_);
	}
	~Section()
	{
		ps_exit(ps_);
	}
	Section(const Section &) = delete;
	Section &operator=(const Section &) = delete;

      private:
	struct ps *ps_;
};

// ---- the map --------------------------------------------------------------------------------

class ReadMostlyMap
{
      public:
	explicit ReadMostlyMap(struct ps *ps) : ps_(ps)
	{
		struct ps_mem_config cfg = PS_MEM_CONFIG_INIT;
		mem_.reset(ps_mem_create(ps_, sizeof(Node), &cfg));
		if (!mem_)
			throw std::runtime_error("ps_mem_create failed");
	}
	~ReadMostlyMap()
	{
		// No reader is left (the caller joined them): free what is still linked.
		for (auto &b : buckets_)
			for (Node *n = b.load(); n != nullptr;) {
				Node *next = n->next.load();
				ps_free(mem_.get(), n);
				n = next;
			}
	}
	ReadMostlyMap(const ReadMostlyMap &) = delete;
	ReadMostlyMap &operator=(const ReadMostlyMap &) = delete;

	// Any thread, no lock: the value of key, if present.
	std::optional<uint64_t> find(uint64_t key) const
	{
		Section s(ps_);
		for (const Node *n = bucket(key).load(std::memory_order_acquire); n != nullptr;
		     n = n->next.load(std::memory_order_acquire)) {
			check(n->check == check_of(n->key, n->value),
			      "node intact inside a section");
			if (n->key == key)
				return n->value;
		}
		return std::nullopt;
	}

	// Insert or replace (copy on write).
	void put(uint64_t key, uint64_t value)
	{
		// The only writer (the mutex): it needs no section to read the chains, and
		// ps_free may be called inside or outside one.
		std::lock_guard<std::mutex> g(writer_);
		std::atomic<Node *> *link = &bucket(key);
		Node *n = link->load(std::memory_order_relaxed);
		while (n != nullptr && n->key != key) {
			link = &n->next;
			n = link->load(std::memory_order_relaxed);
		}
		Node *fresh =
			make(key, value, n ? n->next.load(std::memory_order_relaxed) : nullptr);
		link->store(fresh, std::memory_order_release);
		if (n != nullptr)
			ps_free(mem_.get(), n); // reused only after every section that saw it
	}

	bool erase(uint64_t key)
	{
		std::lock_guard<std::mutex> g(writer_);
		std::atomic<Node *> *link = &bucket(key);
		for (Node *n = link->load(std::memory_order_relaxed); n != nullptr;
		     link = &n->next, n = link->load(std::memory_order_relaxed)) {
			if (n->key == key) {
				link->store(n->next.load(std::memory_order_relaxed),
					    std::memory_order_release);
				ps_free(mem_.get(), n);
				return true;
			}
		}
		return false;
	}

      private:
	struct Node {
		uint64_t key;
		uint64_t value;
		uint64_t check;
		std::atomic<Node *> next;
	};
	// ps_free returns the memory without running a destructor, and only after readers are
	// gone: a node must be trivially destructible (no std::string inside).
	static_assert(std::is_trivially_destructible_v<Node>);

	static uint64_t check_of(uint64_t key, uint64_t value)
	{
		return ~(key * 31 ^ value);
	}

	Node *make(uint64_t key, uint64_t value, Node *next)
	{
		void *p = ps_alloc(mem_.get());
		if (p == nullptr)
			throw std::bad_alloc();
		return new (p) Node{key, value, check_of(key, value), {next}};
	}

	std::atomic<Node *> &bucket(uint64_t key)
	{
		return buckets_[(key * 0x9e3779b97f4a7c15ull) >> 58];
	}
	const std::atomic<Node *> &bucket(uint64_t key) const
	{
		return buckets_[(key * 0x9e3779b97f4a7c15ull) >> 58];
	}

	struct ps *ps_;
	PsMemPtr mem_;
	std::array<std::atomic<Node *>, 64> buckets_{};
	std::mutex writer_;
};

} // namespace

int main()
{
	constexpr uint64_t kKeys = 256, kRounds = 200;
	struct ps_config cfg = PS_CONFIG_INIT;
	PsPtr ps(ps_create(&cfg));
	check(ps != nullptr, "ps_create");
	uint64_t lookups = 0, hits = 0;
	{
		ReadMostlyMap map(ps.get());
		for (uint64_t k = 0; k < kKeys; k++)
			map.put(k, k << 32);

		constexpr unsigned kReaders = 2;
		std::atomic<bool> stop{false};
		std::atomic<unsigned> started{0};
		std::atomic<uint64_t> total{0}, found{0};
		std::vector<std::thread> readers;
		for (unsigned r = 0; r < kReaders; r++)
			readers.emplace_back([&, r] {
				uint64_t n = 0, h = 0;
				for (uint64_t k = r; !stop.load(std::memory_order_relaxed); k++) {
					if (auto v = map.find(k % kKeys)) {
						check((*v >> 32) == k % kKeys,
						      "value belongs to its key");
						h++;
					}
					if (n++ == 0)
						started++;
				}
				total += n;
				found += h;
			});
		// Updates begin once every reader is looking keys up.
		while (started.load() < kReaders)
			std::this_thread::yield();
		// The writer: every round rewrites each key's value; odd keys come and go.
		for (uint64_t round = 1; round <= kRounds; round++)
			for (uint64_t k = 0; k < kKeys; k++) {
				if (k % 2 == 1 && round % 2 == 0)
					check(map.erase(k), "erase a present key");
				else
					map.put(k, k << 32 | round);
			}
		stop = true;
		for (auto &t : readers)
			t.join();
		lookups = total.load();
		hits = found.load();

		for (uint64_t k = 0; k < kKeys; k++) {
			auto v = map.find(k);
			if (k % 2 == 1) // erased in the last (even) round
				check(!v.has_value(), "odd keys erased at the end");
			else
				check(v == (k << 32 | kRounds),
				      "even keys hold the last round's value");
		}
	}
	std::printf("cxx_map: C++%ld, %" PRIu64 " lookups (%" PRIu64 " hits) beside %" PRIu64
		    " updates; final map exact\n",
		    static_cast<long>(__cplusplus / 100 % 100), lookups, hits, kKeys * kRounds);
	return 0;
}
