/* SPDX-License-Identifier: MIT */
/* libplt-hot.so: the function the plt target calls through its PLT. */
#include <stdint.h>

uint64_t plt_hot_step(uint64_t x);

/* As short as a function gets: the call's stub is a good share of it. */
uint64_t plt_hot_step(uint64_t x)
{
	return x * 2654435761u + 1;
}
