package inspect

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// peekEP is an endpoint that only answers the peek questions.
type peekEP struct {
	broker.Endpoint
	warn  []string
	adv   broker.PeekAdvice
	check error
}

func (e peekEP) PeekWarnings() []string                { return e.warn }
func (e peekEP) CheckPeek() (broker.PeekAdvice, error) { return e.adv, e.check }

type warnOnly struct {
	broker.Endpoint
	warn []string
}

func (e warnOnly) PeekWarnings() []string { return e.warn }

func TestPeekAdvice(t *testing.T) {
	adv, err := PeekAdvice(peekEP{warn: []string{"w1"}, adv: broker.PeekAdvice{Warnings: []string{"w2"}, Notes: []string{"n1"}}})
	if err != nil || !reflect.DeepEqual(adv.Warnings, []string{"w1", "w2"}) || !reflect.DeepEqual(adv.Notes, []string{"n1"}) {
		t.Errorf("both: %+v %v", adv, err)
	}
	adv, err = PeekAdvice(peekEP{warn: []string{"w1"}, adv: broker.PeekAdvice{Warnings: []string{"w2"}}, check: errors.New("a stream cannot be peeked")})
	if errs.Code(err) != errs.ExitUsage || err.Error() != "a stream cannot be peeked" || !reflect.DeepEqual(adv.Warnings, []string{"w1"}) {
		t.Errorf("refused: %+v %v (exit %d); want exit 2 and the warnings said before the check", adv, err, errs.Code(err))
	}
	if adv, err := PeekAdvice(warnOnly{warn: []string{"receives count"}}); err != nil || !reflect.DeepEqual(adv.Warnings, []string{"receives count"}) {
		t.Errorf("warner only: %+v %v", adv, err)
	}
	if adv, err := PeekAdvice(struct{ broker.Endpoint }{}); err != nil || adv.Warnings != nil || adv.Notes != nil {
		t.Errorf("neither: %+v %v", adv, err)
	}
}

func TestReadFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "recs.ndjson")
	if err := os.WriteFile(p, []byte(`{"message_id":"a","body":"x"}`+"\n"+`{"message_id":"b","body":"y"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var ids []string
	collect := func(rec *record.Record, _, _ any) error { ids = append(ids, rec.MessageID); return nil }
	if err := ReadFile(p, nil, ReadOptions{}, collect); err != nil || strings.Join(ids, ",") != "a,b" {
		t.Errorf("file: %v %q", err, ids)
	}
	ids = nil
	if err := ReadFile("-", strings.NewReader(`{"message_id":"c","body":"z"}`+"\n"), ReadOptions{}, collect); err != nil || strings.Join(ids, ",") != "c" {
		t.Errorf("stdin: %v %q", err, ids)
	}
	err := ReadFile(filepath.Join(t.TempDir(), "missing.ndjson"), nil, ReadOptions{}, collect)
	if errs.Code(err) != errs.ExitUsage || !strings.HasPrefix(err.Error(), "cannot read --from ") || !strings.HasSuffix(err.Error(), "; pass an NDJSON file of message records or - for stdin") {
		t.Errorf("missing file: %v (exit %d)", err, errs.Code(err))
	}
}
