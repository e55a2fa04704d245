/*
 * bench/smr/peers/urcu_qsbr.c - liburcu's qsbr flavour (urcu-qsbr-sync, urcu-qsbr-call):
 * quiescent-state based: read_lock/unlock are empty, readers announce quiescent
 * states explicitly (see urcu_flavour.h for how often and why).
 */
#define _LGPL_SOURCE /* inline read-side fast paths: the flavour's fastest mode */
#include <urcu/urcu-qsbr.h>

#define URCU_FN(x) urcu_qsbr_##x
#define URCU_NAME "urcu-qsbr"
#define URCU_PEER(k) smr_peer_urcu_qsbr_##k
#include "urcu_flavour.h"
