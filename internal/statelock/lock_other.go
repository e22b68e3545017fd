//go:build !unix

// Package statelock tells a live process's state file from a dead one's
// (flock(2); without it every file counts as a live process's).
package statelock

import (
	"errors"
	"os"
)

// ErrLocked: a live process holds the file (or, here, it cannot be told).
var ErrLocked = errors.New("held by a live process")

// Hold is unsupported without flock(2).
func Hold(*os.File) error { return errors.ErrUnsupported }

// Probe cannot tell a dead owner without flock(2).
func Probe(*os.File) error { return ErrLocked }
