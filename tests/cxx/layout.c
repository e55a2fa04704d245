/* tests/cxx/layout.c - the C side of layout.h's table: compiled as C11, as the library. */
#include "layout.h"

size_t tsync_cxx_layout_c(struct tsync_cxx_layout_entry *out, size_t n)
{
	size_t i = 0;
	TSYNC_CXX_LAYOUT(TSYNC_CXX_LAYOUT_S_, TSYNC_CXX_LAYOUT_F_)
	return i;
}
