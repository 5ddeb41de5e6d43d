package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
)

// printLiveHeap prints the live heap (after a GC) as one JSON line:
// {"memstats":{"seed":N,"live_heap_bytes":B,"heap_sys_bytes":S}}.
func printLiveHeap(w io.Writer, seed uint64) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	fmt.Fprintf(w, "{\"memstats\":{\"seed\":%d,\"live_heap_bytes\":%d,\"heap_sys_bytes\":%d}}\n", seed, m.HeapAlloc, m.HeapSys)
}

// writeProfile writes the runtime profile name ("heap": what is live now;
// "allocs": every allocation so far), after a GC, to path; flag names the
// flag that asked for it in errors.
func writeProfile(name, path, flag string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("%s: %w", flag, err)
	}
	runtime.GC()
	if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", flag, err)
	}
	return f.Close()
}

// startProfiles starts a CPU profile into cpu (if set); the returned stop
// ends it and writes a heap profile into mem (if set).
func startProfiles(cpu, mem string) (stop func() error, err error) {
	var f *os.File
	if cpu != "" {
		if f, err = os.Create(cpu); err != nil {
			return nil, fmt.Errorf("-cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("-cpuprofile: %w", err)
		}
	}
	return func() error {
		if f != nil {
			pprof.StopCPUProfile()
			if err := f.Close(); err != nil {
				return fmt.Errorf("-cpuprofile: %w", err)
			}
		}
		if mem == "" {
			return nil
		}
		return writeProfile("allocs", mem, "-memprofile")
	}, nil
}
