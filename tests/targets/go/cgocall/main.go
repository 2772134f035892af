// SPDX-License-Identifier: MIT

// cgocall: a live Go target whose goroutines spend their time in C.
//
//	cgocall [-s SECONDS] [-p PROFILE] [-r READYFILE]
//
// cLoop calls the C function c_spin through cgo over and over; hashLoop
// hashes with crypto/sha256 in Go.  As hashsort, it writes its own
// runtime/pprof CPU profile of the same seconds to PROFILE, writes "ready"
// to READYFILE once both goroutines run, ends early on SIGUSR2 and prints
// "result: OK".
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
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

var stop int32
var sink uint64

//go:noinline
func cLoop(started *sync.WaitGroup) {
	started.Done()
	for atomic.LoadInt32(&stop) == 0 {
		sink += uint64(C.c_spin(20000000))
	}
}

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
	sink += uint64(buf[0])
}

func writeReady(path string) error {
	if err := os.WriteFile(path+".tmp", []byte("ready\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "cgocall:", err)
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
	started.Add(2)
	done.Add(2)
	go func() { cLoop(&started); done.Done() }()
	go func() { hashLoop(&started); done.Done() }()
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
