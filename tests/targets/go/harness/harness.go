// SPDX-License-Identifier: MIT

// Package harness is what the Go test targets share: the command line, Go's
// own CPU profile of the run, the ready file, the run's end and the
// goroutines that do the work.
//
//	PROGRAM [-s SECONDS] [-p PROFILE] [-hz RATE] [-r READYFILE]
//
// Each worker runs in a goroutine of its own until the run ends (SECONDS,
// default 10, or SIGUSR2).  PROFILE, if given, receives the program's own
// runtime/pprof CPU profile of the same seconds, sampled at RATE per second
// (default 100, Go's own), so that cprof's view can be compared with Go's at
// a rate where the comparison is not dominated by sampling noise.
// READYFILE gets "ready" once every worker runs.  Prints "result: OK" at
// the end.
package harness

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Worker does its work until Stopped returns true; it calls started.Done
// once it is about to loop.
type Worker func(started *sync.WaitGroup)

var stop int32

// Stopped tells the workers that the run is over.
func Stopped() bool { return atomic.LoadInt32(&stop) != 0 }

func fail(name string, err error) {
	fmt.Fprintln(os.Stderr, name+":", err)
	os.Exit(1)
}

func writeReady(path string) error {
	if err := os.WriteFile(path+".tmp", []byte("ready\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

// startProfile starts Go's own CPU profile at hz samples a second.
// pprof.StartCPUProfile sets 100 Hz itself unless a rate is already set, in
// which case the runtime keeps ours (and says so once on stderr).
func startProfile(path string, hz int) (*os.File, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if hz != 100 {
		runtime.SetCPUProfileRate(hz)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Run parses the command line and runs the workers for the run's seconds.
func Run(name string, workers ...Worker) {
	secs := flag.Float64("s", 10, "seconds to run")
	profile := flag.String("p", "", "write Go's own CPU profile here")
	hz := flag.Int("hz", 100, "samples a second in Go's own profile")
	ready := flag.String("r", "", "ready file")
	flag.Parse()

	var f *os.File
	if *profile != "" {
		var err error
		if f, err = startProfile(*profile, *hz); err != nil {
			fail(name, err)
		}
	}
	usr2 := make(chan os.Signal, 1)
	signal.Notify(usr2, syscall.SIGUSR2)

	var started, done sync.WaitGroup
	started.Add(len(workers))
	done.Add(len(workers))
	for _, w := range workers {
		w := w // no arguments: one closure frame, not a wrapper too
		go func() { w(&started); done.Done() }()
	}
	started.Wait()
	if *ready != "" {
		if err := writeReady(*ready); err != nil {
			fail(name, err)
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
			fail(name, err)
		}
	}
	fmt.Println("result: OK")
}
