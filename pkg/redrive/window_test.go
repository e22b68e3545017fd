package redrive

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
)

// windowDLQ is a dead-letter queue whose broker answers CanaryWindow with
// w (only Name, Capabilities and CanaryWindow are called).
type windowDLQ struct {
	broker.Endpoint
	w broker.CanaryWindow
}

func (d windowDLQ) Name() string { return "orders-dlq" }
func (d windowDLQ) Capabilities() broker.Capabilities {
	return broker.Capabilities{Label: "Testbroker"}
}
func (d windowDLQ) CanaryWindow(context.Context, []broker.Destination) (broker.CanaryWindow, error) {
	return d.w, nil
}

// blindDLQ is a queue whose broker cannot compute a window at all.
type blindDLQ struct{ broker.Endpoint }

func (blindDLQ) Name() string                      { return "events-dlt" }
func (blindDLQ) Capabilities() broker.Capabilities { return broker.Capabilities{Label: "Testbroker"} }

// TestDecideWindowSameRulesOnEveryBroker: the computed need is watched and
// stated; a shorter --verify-for is kept with a warning; a longer one
// without; a broker that knows nothing dead-letters into the queue gets the
// stated default; a broker that cannot know refuses --canary without
// --verify-for (bad input, the sentence names the queue and the flag) but
// accepts it with; nothing ever watches 0 s.
func TestDecideWindowSameRulesOnEveryBroker(t *testing.T) {
	ctx := context.Background()
	known := windowDLQ{w: broker.CanaryWindow{Known: true, Returns: true, Need: 90 * time.Second, Reason: "3 × 20s of orders, + 30s"}}

	w, err := DecideWindow(ctx, known, nil, 0, false)
	if err != nil || w.For != 90*time.Second || w.Reason != "3 × 20s of orders, + 30s" || !w.Computed || w.Warning != "" {
		t.Fatalf("computed: %+v %v; want 1m30s with its reason", w, err)
	}
	w, err = DecideWindow(ctx, known, nil, 10*time.Second, true)
	if err != nil || w.For != 10*time.Second || w.Computed || !strings.Contains(w.Warning, "a PASS proves less") || !strings.Contains(w.Reason, "shorter than the 1m30s") {
		t.Fatalf("--verify-for 10s: %+v %v; want 10s, a warning, and the reason saying it is short", w, err)
	}
	w, err = DecideWindow(ctx, known, nil, 5*time.Minute, true)
	if err != nil || w.For != 5*time.Minute || w.Warning != "" || w.Reason != "--verify-for 5m0s" {
		t.Fatalf("--verify-for 5m: %+v %v; want 5m, no warning", w, err)
	}

	none := windowDLQ{w: broker.CanaryWindow{Known: true, Reason: "no queue dead-letters into orders-dlq"}}
	w, err = DecideWindow(ctx, none, nil, 0, false)
	if err != nil || w.For != broker.DefaultCanaryWindow || !strings.Contains(w.Reason, "no queue dead-letters into orders-dlq: the default 2m0s") {
		t.Fatalf("nothing dead-letters: %+v %v; want the stated 2m default", w, err)
	}

	for _, dlq := range []broker.Endpoint{windowDLQ{w: broker.CanaryWindow{Reason: "its consumer decides"}}, blindDLQ{}} {
		_, err = DecideWindow(ctx, dlq, nil, 0, false)
		if errs.Code(err) != 2 || !strings.Contains(err.Error(), "--canary needs --verify-for on "+dlq.Name()) {
			t.Fatalf("%s, unknown window, no --verify-for: %v; want bad input asking for --verify-for", dlq.Name(), err)
		}
		w, err = DecideWindow(ctx, dlq, nil, time.Minute, true)
		if err != nil || w.For != time.Minute || w.Warning != "" {
			t.Fatalf("%s, unknown window, --verify-for 1m: %+v %v", dlq.Name(), w, err)
		}
	}
}
