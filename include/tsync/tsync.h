/* tsync/tsync.h - everything: clock, thread registry, ParSec sections, memory, locks. */
#ifndef TSYNC_TSYNC_H
#define TSYNC_TSYNC_H
#include <tsync/clock.h>
#include <tsync/thread.h>
#include <tsync/ps.h>
#include <tsync/ps_mem.h>
#include <tsync/ps_lock.h>
#define TSYNC_VERSION_MAJOR 0
#define TSYNC_VERSION_MINOR 1
#define TSYNC_VERSION_PATCH 0
#endif
