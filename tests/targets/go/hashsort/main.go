// SPDX-License-Identifier: MIT

// hashsort: a live Go target for cprof's tests.
//
//	hashsort [-s SECONDS] [-p PROFILE] [-r READYFILE]
//
// Three goroutines spin for SECONDS (default 10): hashLoop hashes with
// crypto/sha256 (whose block function is assembly that uses %rbp as data),
// sortLoop sorts random ints, and clockLoop reads the clock (time.Now calls
// the vdso on the g0 stack).  The program writes its own runtime/pprof CPU profile of the
// same seconds to PROFILE (if given), so that cprof's view can be compared
// with Go's.
// READYFILE gets "ready" once both goroutines run; SIGUSR2 ends the run
// early.  Prints "result: OK" at the end.
package main

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/signal"
	"runtime/pprof"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

var stop int32
var sink byte

//go:noinline
func hashLoop(started *sync.WaitGroup) {
	buf := make([]byte, 4096)
	started.Done()
	for atomic.LoadInt32(&stop) == 0 {
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
	for atomic.LoadInt32(&stop) == 0 {
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
	for atomic.LoadInt32(&stop) == 0 {
		for i := 0; i < 1000; i++ {
			sum += time.Now().UnixNano() & 1
			for j := int64(0); j < 200; j++ {
				sum = sum*31 + j
			}
		}
	}
	sink ^= byte(sum)
}

func writeReady(path string) error {
	if err := os.WriteFile(path+".tmp", []byte("ready\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "hashsort:", err)
	os.Exit(1)
}

func main() {
	secs := flag.Float64("s", 10, "seconds to run")
	profile := flag.String("p", "", "write Go's own CPU profile here")
	ready := flag.String("r", "", "ready file")
	flag.Parse()
	var f *os.File
	if *profile != "" {
		var err error
		if f, err = os.Create(*profile); err != nil {
			fail(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fail(err)
		}
	}
	usr2 := make(chan os.Signal, 1)
	signal.Notify(usr2, syscall.SIGUSR2)

	var started, done sync.WaitGroup
	started.Add(3)
	done.Add(3)
	go func() { hashLoop(&started); done.Done() }()
	go func() { sortLoop(&started); done.Done() }()
	go func() { clockLoop(&started); done.Done() }()
	started.Wait()
	if *ready != "" {
		if err := writeReady(*ready); err != nil {
			fail(err)
		}
	}
	select {
	case <-time.After(time.Duration(*secs * float64(time.Second))):
	case <-usr2:
	}
	atomic.StoreInt32(&stop, 1)
	done.Wait()
	if f != nil {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fail(err)
		}
	}
	fmt.Println("result: OK")
}
