// SPDX-License-Identifier: MIT

// hashsort: a live Go target for cprof's tests.
//
//	hashsort [-s SECONDS] [-p PROFILE] [-hz RATE] [-r READYFILE]
//
// Three goroutines spin for SECONDS (default 10): hashLoop hashes with
// crypto/sha256 (whose block function is assembly that uses %rbp as data),
// sortLoop sorts random ints, and clockLoop reads the clock (time.Now calls
// the vdso on the g0 stack).  The command line, Go's own profile of the
// same seconds and the run's end are the harness package's.
package main

import (
	"crypto/sha256"
	"math/rand"
	"sort"
	"sync"
	"time"

	"cprof.test/harness"
)

var sink byte

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
	sink = buf[0]
}

//go:noinline
func sortLoop(started *sync.WaitGroup) {
	r := rand.New(rand.NewSource(1))
	xs := make([]int, 20000)
	started.Done()
	for !harness.Stopped() {
		for i := range xs {
			xs[i] = r.Int()
		}
		sort.Ints(xs)
	}
}

//go:noinline
func clockLoop(started *sync.WaitGroup) {
	var sum int64
	started.Done()
	for !harness.Stopped() {
		for i := 0; i < 1000; i++ {
			sum += time.Now().UnixNano() & 1
			for j := int64(0); j < 200; j++ {
				sum = sum*31 + j
			}
		}
	}
	sink ^= byte(sum)
}

func main() {
	harness.Run("hashsort", hashLoop, sortLoop, clockLoop)
}
