//go:build unix

// Package statelock tells a live process's state file from a dead one's:
// the owner holds an exclusive flock(2) on its file while it runs, and the
// kernel drops it when the process dies, however it dies.
package statelock

import (
	"errors"
	"os"
	"syscall"
)

// ErrLocked: a live process holds the file.
var ErrLocked = errors.New("held by a live process")

// Hold takes the owner's exclusive lock (kept until the file is closed or
// the process dies).
func Hold(f *os.File) error { return flock(f, syscall.LOCK_EX) }

// Probe takes a shared lock without waiting: ErrLocked while the owner
// lives, nil when it is dead (then Close the file to drop the probe's lock).
func Probe(f *os.File) error { return flock(f, syscall.LOCK_SH) }

func flock(f *os.File, how int) error {
	err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return ErrLocked
	}
	return err
}
