/*
 * bench/smr/peers/urcu_memb.c - liburcu's memb flavour (urcu-memb-sync, urcu-memb-call):
 * membarrier(2): readers use compiler barriers only, synchronize_rcu issues a
 * process-wide membarrier to order them.
 */
#define _LGPL_SOURCE /* inline read-side fast paths: the flavour's fastest mode */
#include <urcu/urcu-memb.h>

#define URCU_FN(x) urcu_memb_##x
#define URCU_NAME "urcu-memb"
#define URCU_PEER(k) smr_peer_urcu_memb_##k
#include "urcu_flavour.h"
