/* SPDX-License-Identifier: MIT */
/*
 * TAP output for the unit tests (tests/test-*.c), read by automake's
 * tap-driver.sh: one "ok"/"not ok" line per check, a "# SKIP" directive for
 * what cannot be checked here, and the plan "1..N" at the end, so that a
 * test that dies half way shows as an error (no plan) rather than a pass.
 */
#ifndef CPROF_TESTS_TAP_H
#define CPROF_TESTS_TAP_H

#include <stdbool.h>

/* One test point: "ok - WHAT" when cond holds, else "not ok - WHAT". */
void check(bool cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One test point that cannot run here: "ok - WHAT # SKIP WHY". */
void skip(const char *what, const char *why);

/* Nothing can run here: "1..0 # SKIP WHY", then exit(0) (a skip, to TAP). */
void skip_all(const char *why) __attribute__((noreturn));

/* The checks that failed so far. */
int tap_failures(void);

/* Prints the plan; returns the exit status: 0, or 1 when a check failed. */
int tap_done(void);

#endif
