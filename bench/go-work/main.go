// SPDX-License-Identifier: MIT

// go-work: the Go workload of bench/go-perf.sh: two goroutines, one hashing
// with crypto/sha256, one sorting random ints, until SIGTERM.
//
//	go-work COUNTFILE
//
// Every 100 ms it writes the units of work done so far (a 4 KiB hash, or
// 100 ints sorted, is a unit) to COUNTFILE, replaced whole, so that a
// reader measures the throughput over any window.
package main

import (
	"crypto/sha256"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"sync/atomic"
	"time"
)

var done int64

func hashLoop() {
	buf := make([]byte, 4096)
	for {
		s := sha256.Sum256(buf)
		buf[0] ^= s[0]
		atomic.AddInt64(&done, 1)
	}
}

func sortLoop() {
	r := rand.New(rand.NewSource(1))
	xs := make([]int, 20000)
	for {
		for i := range xs {
			xs[i] = r.Int()
		}
		sort.Ints(xs)
		atomic.AddInt64(&done, int64(len(xs)/100))
	}
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go-work COUNTFILE")
		os.Exit(64)
	}
	path := os.Args[1]
	go hashLoop()
	go sortLoop()
	for range time.Tick(100 * time.Millisecond) {
		b := []byte(fmt.Sprintf("%d\n", atomic.LoadInt64(&done)))
		if err := os.WriteFile(path+".tmp", b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "go-work:", err)
			os.Exit(1)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			fmt.Fprintln(os.Stderr, "go-work:", err)
			os.Exit(1)
		}
	}
}
