package sqs

import "context"

// Lease internals the external tests look at.

// ExtendLease runs one extension pass over every held message.
func ExtendLease(l *Lease, ctx context.Context) { l.extend(ctx, 0) }

// LeaseIsLost reports whether l marked message id lost.
func LeaseIsLost(l *Lease, id string) bool { return l.isLost(id) }

// LeaseHolds reports whether l holds message id.
func LeaseHolds(l *Lease, id string) bool { return l.isHeld(id) }

// isLost reports whether the lease of message id was lost and the message
// has not been received again since.
func (l *Lease) isLost(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.lost[id]
	return ok
}

// isHeld reports whether message id is held.
func (l *Lease) isHeld(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.held[id]
	return ok
}
