package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// A soak spans machines by partitions: partition i of n runs the seeds of
// the range whose offset from its first seed is i modulo n (strided: the
// seeds first+i, first+i+n, ...). Strided shares cost alike whatever part
// of the range is slow, and a range extended later (a larger -seeds B)
// keeps every seed in the partition it was in. Each partition keeps its
// own state file and findings (resumable on its own); simrun -soak-merge
// reads them all back as one soak.
//
// The partition comes from -partition i/n, or, in a Kubernetes Indexed
// Job, from the index the Job gives each pod (envIndex) with the count
// from -partitions n or envPartitions.
const (
	envIndex      = "JOB_COMPLETION_INDEX" // set by Kubernetes in each pod of an Indexed Job
	envPartitions = "SOAK_PARTITIONS"      // the partition count, where -partitions is not given
	maxPartitions = 1 << 16
)

// lookupEnv reads the environment (a variable so that tests can set it).
var lookupEnv = os.LookupEnv

// partition is a soak's share of its seed range: index of count (count 1:
// the whole range).
type partition struct{ index, count int }

func (p partition) partitioned() bool { return p.count > 1 }

// String is "i/n".
func (p partition) String() string { return fmt.Sprintf("%d/%d", p.index, p.count) }

// dir is the name of the partition's folder under -soak-dir.
func (p partition) dir() string {
	w := len(strconv.Itoa(p.count - 1))
	return fmt.Sprintf("part-%0*d-of-%d", w, p.index, p.count)
}

// first returns the partition's first seed of a range starting at first.
func (p partition) first(first uint64) uint64 { return first + uint64(p.index) }

// step is the distance between two seeds of the partition.
func (p partition) step() uint64 { return uint64(max(p.count, 1)) }

// owns reports whether seed (in a range starting at first) is the
// partition's.
func (p partition) owns(first, seed uint64) bool {
	return seed >= first && (seed-first)%p.step() == uint64(p.index)
}

// size returns how many seeds of first..last are the partition's.
func (p partition) size(first, last uint64) int {
	f := p.first(first)
	if f > last {
		return 0
	}
	return int((last-f)/p.step()) + 1
}

// parsePartition works out a soak's partition from -partition (flagPart,
// "" if not given), -partitions (flagCount, set if given) and the
// environment; seeds is the size of the range.
func parsePartition(flagPart string, flagCount int, countSet bool, seeds uint64) (partition, error) {
	count, countFrom := 0, ""
	if countSet {
		count, countFrom = flagCount, "-partitions"
		if count < 1 {
			return partition{}, usagef("-partitions %d: need at least 1", count)
		}
	} else if v, ok := lookupEnv(envPartitions); ok && strings.TrimSpace(v) != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 {
			return partition{}, usagef("%s=%q: want the partition count, a positive integer", envPartitions, v)
		}
		count, countFrom = n, envPartitions
	}
	envIdx, haveIdx := lookupEnv(envIndex)
	haveIdx = haveIdx && strings.TrimSpace(envIdx) != ""
	var p partition
	switch {
	case flagPart != "":
		is, ns, ok := strings.Cut(strings.TrimSpace(flagPart), "/")
		i, err1 := strconv.Atoi(strings.TrimSpace(is))
		n, err2 := strconv.Atoi(strings.TrimSpace(ns))
		if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
			return partition{}, usagef("-partition %q: want i/n with 0 <= i < n (the index counts from 0, as a Kubernetes Indexed Job's does)", flagPart)
		}
		p = partition{i, n}
		if count != 0 && count != n {
			return partition{}, usagef("-partition %s and %s %d disagree on the partition count", flagPart, countFrom, count)
		}
		if haveIdx && strings.TrimSpace(envIdx) != strconv.Itoa(i) {
			return partition{}, usagef("-partition %s disagrees with %s=%s", flagPart, envIndex, envIdx)
		}
	case count != 0:
		if !haveIdx {
			if count == 1 {
				return partition{0, 1}, nil
			}
			return partition{}, usagef("%s %d needs this soak's index: -partition i/%d, or %s (which a Kubernetes Indexed Job sets)", countFrom, count, count, envIndex)
		}
		i, err := strconv.Atoi(strings.TrimSpace(envIdx))
		if err != nil || i < 0 || i >= count {
			return partition{}, usagef("%s=%q: want an index from 0 to %d (%s %d)", envIndex, envIdx, count-1, countFrom, count)
		}
		p = partition{i, count}
	case haveIdx:
		return partition{}, usagef("%s is set (a pod of a Kubernetes Indexed Job) but not the partition count: give -partitions N or %s, or -partition i/n", envIndex, envPartitions)
	default:
		return partition{0, 1}, nil
	}
	if p.count > maxPartitions {
		return partition{}, usagef("%d partitions: at most %d", p.count, maxPartitions)
	}
	if uint64(p.count) > seeds {
		return partition{}, usagef("%d partitions of %d seeds: some would have none", p.count, seeds)
	}
	return p, nil
}
