//go:build !unix

package sqs

import (
	"errors"
	"os"
)

// errHoldLocked: a live process holds the ledger file.
var errHoldLocked = errors.New("held by a live process")

// Without flock(2) a ledger file cannot tell a live process from a dead
// one: the ledger is off (OpenHoldLedger fails, and the run goes on
// without it).
func lockHold(*os.File) error { return errors.ErrUnsupported }

func tryLockHold(*os.File, bool) error { return errHoldLocked }
