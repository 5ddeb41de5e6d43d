package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

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
		m, err := os.Create(mem)
		if err != nil {
			return fmt.Errorf("-memprofile: %w", err)
		}
		runtime.GC()
		if err := pprof.Lookup("allocs").WriteTo(m, 0); err != nil {
			m.Close()
			return fmt.Errorf("-memprofile: %w", err)
		}
		return m.Close()
	}, nil
}
