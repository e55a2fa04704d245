/*
 * bench/smr/peers/urcu_mb.c - liburcu's mb flavour (urcu-mb-sync, urcu-mb-call):
 * memory barriers on the read side (smp_mb in read_lock/unlock); no signals or syscalls.
 */
#define _LGPL_SOURCE /* inline read-side fast paths: the flavour's fastest mode */
#include <urcu/urcu-mb.h>

#define URCU_FN(x) urcu_mb_##x
#define URCU_NAME "urcu-mb"
#define URCU_PEER(k) smr_peer_urcu_mb_##k
#include "urcu_flavour.h"
