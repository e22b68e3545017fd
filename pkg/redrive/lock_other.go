//go:build !unix

package redrive

import (
	"errors"
	"os"
)

var errRunLocked = errors.New("the run is in use")

// lockJournal does nothing where flock(2) does not exist: give every
// process its own --state-dir there.
func lockJournal(*os.File) error { return nil }
