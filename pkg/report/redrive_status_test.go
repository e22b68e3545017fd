package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

// A run that stopped at --max (or a canary's count) says so next to
// "completed": what was asked is done, the DLQ is not drained. The JSON
// keeps its status (and stopped_at_max).
func TestRedriveSummarySaysCompletedAtTheMaximum(t *testing.T) {
	for _, c := range []struct {
		atMax bool
		want  string
	}{
		{true, "status\tcompleted (stopped at the requested maximum; the rest was left where it is)"},
		{false, "status\tcompleted"},
	} {
		var out bytes.Buffer
		s := output.Test(nil, &out, &bytes.Buffer{}, false)
		sum := RedriveSummary{Result: &redrive.Result{RunID: "r1", Moved: 5, StoppedAtMax: c.atMax}, Status: redrive.StatusCompleted, DLQ: "orders-dlq", To: "orders"}
		if err := WriteRedriveSummary(s, output.NewProgress(s, output.Table), output.Table, sum, broker.Capabilities{}.Words()); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(out.String(), "\n")
		if len(lines) < 2 || lines[1] != c.want {
			t.Errorf("stopped at max %v: status line %q, want %q\n%s", c.atMax, lines[1], c.want, out.String())
		}
	}
}
