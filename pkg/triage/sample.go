package triage

import (
	"context"
	"errors"

	"github.com/dlqctl/dlqctl/pkg/classify"
	"github.com/dlqctl/dlqctl/pkg/input"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/logs"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// Sample reads in until n records sel keeps, redacted unless redactor is
// nil; with lk (--logs), records without failure context are looked up
// in the consumer's logs before sel sees them. A refusal of sel stops
// the read with its error.
func Sample(ctx context.Context, r *input.Reader, in input.Options, n int, sel *classify.Selector, redactor *inspect.Redactor, lk *logs.Lookup) ([]record.Record, *input.Result, error) {
	var recs []record.Record
	next, flush := lk.Stream(func(rec *record.Record, parsed any) error {
		if ok, err := sel.Keep(rec, parsed); !ok {
			return err // a refusal stops the read
		}
		x := *rec
		if redactor != nil {
			x = redactor.Record(x)
		}
		recs = append(recs, x)
		if len(recs) >= n {
			return input.ErrStop
		}
		return nil
	})
	res, err := r.ForEach(ctx, in, next)
	if err == nil && len(recs) < n {
		if err = flush(); errors.Is(err, input.ErrStop) {
			err = nil
		}
	}
	lk.Summary()
	return recs, res, err
}
