package transform

import (
	"sort"
	"sync"

	"github.com/dlqctl/dlqctl/pkg/errs"
)

// RefuseAfter is how many messages the transform may fail on, with none
// transformed, before it refuses the run (the --filter rule): an
// expression that fails on everything is broken, and nothing may move. A
// run that reads fewer refuses at its end (Refusal).
const RefuseAfter = 100

// ErrorCount is the failures of one reason: how many, and the first.
type ErrorCount struct {
	Reason     string `json:"reason"`
	Count      int    `json:"count"`
	FirstID    string `json:"first_id"`
	FirstError string `json:"first_error"`
}

// Summary is what a transform did in a run (-o json: "transform").
type Summary struct {
	Expression string `json:"expression"`
	SHA256     string `json:"expression_sha256"`
	// Changed: copies whose body or attributes differ from the original;
	// Unchanged: the expression returned the message as it was (it is
	// sent, with the provenance marker); Failed: left where they were.
	Changed   int          `json:"changed"`
	Unchanged int          `json:"unchanged"`
	Failed    int          `json:"failed"`
	Errors    []ErrorCount `json:"errors,omitempty"`
}

// Tally counts what Apply did and decides the refusal. It is safe for
// concurrent use; once one message transformed cleanly the run is never
// refused, and once refused no message transforms any more — so a refused
// run has sent nothing, whatever order the workers ran in.
type Tally struct {
	src string

	mu         sync.Mutex
	nChanged   int
	nUnchanged int
	nFailed    int
	anyClean   bool
	refusal    error
	byReason   map[string]*ErrorCount
	onError    func(*Error)
	told       int
}

func newTally(src string) *Tally { return &Tally{src: src, byReason: map[string]*ErrorCount{}} }

// OnError sets a function told about the first 20 failures (-v); it must
// be safe for concurrent use.
func (t *Tally) OnError(fn func(*Error)) {
	t.mu.Lock()
	t.onError = fn
	t.mu.Unlock()
}

// clean notes a message transformed; it returns the refusal when the run
// was already refused (the message must not be sent).
func (t *Tally) clean(changed bool) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.refusal != nil {
		return t.refusal
	}
	t.anyClean = true
	if changed {
		t.nChanged++
	} else {
		t.nUnchanged++
	}
	return nil
}

// failed notes a message the transform failed on; it returns the refusal
// when this (or an earlier) failure refused the run, else e.
func (t *Tally) failed(e *Error) error {
	t.mu.Lock()
	t.nFailed++
	c := t.byReason[e.Reason]
	if c == nil {
		c = &ErrorCount{Reason: e.Reason, FirstID: e.MessageID, FirstError: e.Err.Error()}
		t.byReason[e.Reason] = c
	}
	c.Count++
	if !t.anyClean && t.refusal == nil && t.nFailed >= RefuseAfter {
		t.refuseLocked()
	}
	err := t.refusal
	fn := t.onError
	tell := fn != nil && t.told < 20
	if tell {
		t.told++
	}
	t.mu.Unlock()
	if tell {
		fn(e)
	}
	if err != nil {
		return err
	}
	return e
}

func (t *Tally) refuseLocked() {
	first := t.firstLocked()
	t.refusal = errs.BadInputf("--transform failed on every message read (%d message(s); first: message %s: %s: %s); fix the expression (see the failures with --dry-run) and run again; nothing was changed",
		t.nFailed, first.FirstID, first.Reason, first.FirstError)
}

// firstLocked is the reason with the most failures (the first seen on a tie).
func (t *Tally) firstLocked() ErrorCount {
	var best *ErrorCount
	for _, c := range t.sortedLocked() {
		if best == nil || c.Count > best.Count {
			best = c
		}
	}
	return *best
}

func (t *Tally) sortedLocked() []*ErrorCount {
	out := make([]*ErrorCount, 0, len(t.byReason))
	for _, r := range sortedNames(t.byReason) {
		out = append(out, t.byReason[r])
	}
	return out
}

// Refusal returns the refusal (a bad-input error) when the transform
// failed on every message it was applied to — one or more, none
// transformed — and nil otherwise. Call it when a run ends.
func (t *Tally) Refusal() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.anyClean && t.refusal == nil && t.nFailed > 0 {
		t.refuseLocked()
	}
	return t.refusal
}

// Summary returns the counts so far.
func (t *Tally) Summary(src, sha string) *Summary {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := &Summary{Expression: src, SHA256: sha, Changed: t.nChanged, Unchanged: t.nUnchanged, Failed: t.nFailed}
	for _, c := range t.sortedLocked() {
		s.Errors = append(s.Errors, *c)
	}
	sort.SliceStable(s.Errors, func(a, b int) bool { return s.Errors[a].Count > s.Errors[b].Count })
	return s
}

// Summary is the transform's summary so far.
func (t *Transform) Summary() *Summary { return t.tally.Summary(t.src, t.sha) }
