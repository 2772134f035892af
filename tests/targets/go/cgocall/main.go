// SPDX-License-Identifier: MIT

// cgocall: a live Go target whose goroutines spend their time in C.
//
//	cgocall [-s SECONDS] [-p PROFILE] [-hz RATE] [-r READYFILE]
//
// cLoop calls the C function c_spin through cgo over and over; hashLoop
// hashes with crypto/sha256 in Go.  The command line, Go's own profile of
// the same seconds and the run's end are the harness package's.
package main

/*
#include <stdint.h>

__attribute__((noinline)) static uint64_t c_mix(uint64_t x, uint64_t i)
{
	return x * 6364136223846793005ull + i;
}

__attribute__((noinline)) static uint64_t c_spin(uint64_t n)
{
	uint64_t x = 0, i;

	for (i = 0; i < n; i++)
		x = c_mix(x, i);
	return x;
}
*/
import "C"

import (
	"crypto/sha256"
	"sync"

	"cprof.test/harness"
)

var sink uint64

//go:noinline
func cLoop(started *sync.WaitGroup) {
	started.Done()
	for !harness.Stopped() {
		sink += uint64(C.c_spin(20000000))
	}
}

//go:noinline
func hashLoop(started *sync.WaitGroup) {
	buf := make([]byte, 4096)
	started.Done()
	for !harness.Stopped() {
		for i := 0; i < 64; i++ {
			s := sha256.Sum256(buf)
			buf[0] ^= s[0]
		}
	}
	sink += uint64(buf[0])
}

func main() {
	harness.Run("cgocall", cLoop, hashLoop)
}
