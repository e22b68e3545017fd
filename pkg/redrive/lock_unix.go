//go:build unix

package redrive

import (
	"errors"
	"os"
	"syscall"
)

// errRunLocked means another open journal (another process) holds the run.
var errRunLocked = errors.New("the run is in use")

// lockJournal takes an exclusive lock on the open journal file, without
// waiting; the kernel drops it when the file is closed or the process
// dies (so a run killed with kill -9 can be resumed at once).
func lockJournal(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errRunLocked
	}
	return err
}
