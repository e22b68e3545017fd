package inspect

import (
	"context"
	"errors"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// PeekHooks are what PeekToEnd tells its caller.
type PeekHooks struct {
	// OpenErr maps an error opening an endpoint's source (nothing read
	// from it yet); nil returns it as it is.
	OpenErr func(error) error
	// Truncated is told an endpoint's source left records unread (its
	// broker.TruncationNoter note) when it ended.
	Truncated func(e broker.Endpoint, note string)
	// Done is told how many records each endpoint gave, after it.
	Done func(e broker.Endpoint, n int)
}

// PeekToEnd reads eps one after the other, each a queue read by offset to
// the ends taken when its source opens (Kafka: broker.Peek from the
// group's committed offsets, read_committed, committing nothing), and
// passes every record to fn; it stops after max records in all (0: no
// limit) or at fn's first error, which it returns.
func PeekToEnd(ctx context.Context, eps []broker.Endpoint, max int, fn func(rec *record.Record, parsed any) error, h PeekHooks) error {
	errMax := errors.New("max")
	read := 0
	for _, e := range eps {
		src, err := e.OpenSource(ctx, broker.SourceOptions{Mode: broker.Peek, Decode: Decode})
		if err != nil {
			if h.OpenErr != nil {
				err = h.OpenErr(err)
			}
			return err
		}
		n, err := func() (int, error) {
			defer src.Close(context.WithoutCancel(ctx))
			n := 0
			for {
				ms, err := src.Next(ctx, 500)
				if errors.Is(err, broker.ErrSourceDone) {
					if t, ok := src.(broker.TruncationNoter); ok && t.TruncatedNote() != "" && h.Truncated != nil {
						h.Truncated(e, t.TruncatedNote())
					}
					return n, nil
				}
				if err != nil {
					return n, err
				}
				for _, m := range ms {
					n++
					if err := fn(m.Record, m.Parsed); err != nil {
						return n, err
					}
					if max > 0 && read+n >= max {
						return n, errMax
					}
				}
			}
		}()
		read += n
		if h.Done != nil {
			h.Done(e, n)
		}
		if errors.Is(err, errMax) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}
