//go:build unix

package sqs

import (
	"errors"
	"os"
	"syscall"
)

// errHoldLocked: a live process holds the ledger file.
var errHoldLocked = errors.New("held by a live process")

// lockHold takes the owner's exclusive lock on its ledger file; the kernel
// drops it when the process dies, however it dies.
func lockHold(f *os.File) error {
	return flock(f, syscall.LOCK_EX)
}

// tryLockHold takes a reader's shared lock (several runs may read a dead
// process's file at once) or, with exclusive, the lock to remove it. It
// fails with errHoldLocked while the owner lives.
func tryLockHold(f *os.File, exclusive bool) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	return flock(f, how)
}

func flock(f *os.File, how int) error {
	err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errHoldLocked
	}
	return err
}
