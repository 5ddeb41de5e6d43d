//go:build !unix

package driversim

import "os/exec"

// detach leaves cmd in its parent's process group (see detach_unix.go).
func detach(*exec.Cmd) {}
