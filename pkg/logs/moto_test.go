package logs

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	cwl "github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/internal/worker"
)

func logGroup(t testing.TB, api *cwl.Client) string {
	t.Helper()
	g := "/test/" + testenv.UniqueName(t, "logs")
	if _, err := api.CreateLogGroup(context.Background(), &cwl.CreateLogGroupInput{LogGroupName: aws.String(g)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = api.DeleteLogGroup(context.Background(), &cwl.DeleteLogGroupInput{LogGroupName: aws.String(g)})
	})
	return g
}

func put(t testing.TB, api *cwl.Client, group, stream string, msgs ...string) {
	t.Helper()
	ctx := context.Background()
	_, _ = api.CreateLogStream(ctx, &cwl.CreateLogStreamInput{LogGroupName: aws.String(group), LogStreamName: aws.String(stream)})
	now := time.Now()
	for i := 0; i < len(msgs); i += 5000 {
		var evs []types.InputLogEvent
		for j, m := range msgs[i:min(i+5000, len(msgs))] {
			evs = append(evs, types.InputLogEvent{Timestamp: aws.Int64(now.Add(time.Duration(i+j) * time.Microsecond).UnixMilli()), Message: aws.String(m)})
		}
		if _, err := api.PutLogEvents(ctx, &cwl.PutLogEventsInput{LogGroupName: aws.String(group), LogStreamName: aws.String(stream), LogEvents: evs}); err != nil {
			t.Fatal(err)
		}
	}
}

// moto 5.2.1 supports single and quoted terms in filter patterns but not
// the OR syntax: a pattern starting with '?' matches every event. The
// finder matches events against the full ids itself, so its answers are
// the same on AWS and on moto (only moto returns more events). This pins
// the emulator behaviour docs/emulators.md describes.
func TestMotoFilterPatternSupport(t *testing.T) {
	env := testenv.RequireMoto(t)
	api := env.Logs(t)
	g := logGroup(t, api)
	put(t, api, g, "s", "alpha-1 failed", "beta-2 failed", "gamma-3 ok")
	count := func(pattern string) int {
		out, err := api.FilterLogEvents(t.Context(), &cwl.FilterLogEventsInput{LogGroupName: aws.String(g), FilterPattern: aws.String(pattern)})
		if err != nil {
			t.Fatal(err)
		}
		return len(out.Events)
	}
	if n := count(`"alpha"`); n != 1 {
		t.Errorf(`moto: "alpha" matched %d events, want 1 (quoted terms are supported)`, n)
	}
	if n := count(`?"alpha" ?"beta"`); n != 3 {
		t.Errorf(`moto: ?"alpha" ?"beta" matched %d events; moto 5.2.1 ignores OR patterns and returns all 3 — if this changed, update docs/emulators.md`, n)
	}
}

// The finder against moto's CloudWatch Logs: ids batched (64 per call),
// pages followed, every message found in its own group, Lambda request
// ids followed, the rest reported as not mentioned.
func TestFinderOnMoto(t *testing.T) {
	env := testenv.RequireMoto(t)
	api := env.Logs(t)
	ctx := t.Context()
	svc, fn := logGroup(t, api), logGroup(t, api)
	var svcMsgs, lambdaMsgs []sqstypes.Message
	for i := 0; i < 130; i++ {
		svcMsgs = append(svcMsgs, sqstypes.Message{MessageId: aws.String(uuidFor(i)), Attributes: map[string]string{"ApproximateReceiveCount": "2"}})
	}
	for i := 130; i < 140; i++ {
		lambdaMsgs = append(lambdaMsgs, sqstypes.Message{MessageId: aws.String(uuidFor(i))})
	}
	noise := make([]string, 300)
	for i := range noise {
		noise[i] = fmt.Sprintf("time=x level=INFO msg=\"health check\" n=%d", i)
	}
	put(t, api, svc, "noise", noise...)
	if err := (&worker.LogSink{API: api, Group: svc, Style: worker.StyleService}).Batch(ctx, 0, worker.ModeDown, nil, svcMsgs); err != nil {
		t.Fatal(err)
	}
	if err := (&worker.LogSink{API: api, Group: fn, Style: worker.StyleLambda}).Batch(ctx, 0, worker.ModeBug, nil, lambdaMsgs); err != nil {
		t.Fatal(err)
	}
	// A Python Lambda: the runtime's error line carries no request id; it
	// is found in the invocation's stream between START and END.
	pyRID, pyID := "0d9c8b7a-6f5e-4d3c-8b2a-1f0e9d8c7b6a", uuidFor(150)
	put(t, api, fn, "2024/05/01/[$LATEST]python",
		"START RequestId: "+pyRID+" Version: $LATEST",
		"[INFO]\t2024-05-01T12:00:00.000Z\t"+pyRID+"\tprocessing record "+pyID,
		"[ERROR] KeyError: 'orderId'\nTraceback (most recent call last):\n  File \"/var/task/app.py\", line 9, in handler\n    order = body['orderId']",
		"END RequestId: "+pyRID,
		"REPORT RequestId: "+pyRID+"\tDuration: 12.00 ms\tBilled Duration: 12 ms\tMemory Size: 128 MB\tMax Memory Used: 40 MB\tStatus: error\tError Type: Runtime.Unknown")
	var reqs []Request
	now := time.Now()
	reqs = append(reqs, Request{MessageID: pyID, From: now.Add(-time.Hour), To: now.Add(time.Minute)})
	for i := 0; i < 150; i++ { // 10 ids nobody logged
		reqs = append(reqs, Request{MessageID: uuidFor(i), From: now.Add(-time.Hour), To: now.Add(time.Minute)})
	}
	dir := t.TempDir()
	cache := OpenCache(dir, []string{svc, fn}, "", false)
	f := New(env.Logs(t), Options{Groups: []string{svc, fn}, PageLimit: 200, Rate: 50, Cache: cache})
	res, err := f.Lookup(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 150; i++ {
		fl := res[uuidFor(i)]
		switch {
		case i < 130:
			if !fl.HasContext() || fl.Source.LogGroup != svc || !strings.Contains(fl.Reason, "connection refused") {
				t.Fatalf("message %d: %+v, want the service's connection refused", i, fl)
			}
		case i < 140:
			if !fl.HasContext() || fl.Source.LogGroup != fn || fl.Type != "TypeError" || fl.Source.RequestID == "" {
				t.Fatalf("message %d: %+v, want the Lambda invocation's TypeError through its request id", i, fl)
			}
		default:
			if fl.HasContext() || fl.Source == nil || fl.Source.Note != NotFoundNote {
				t.Fatalf("message %d: %+v, want %q", i, fl, NotFoundNote)
			}
		}
	}
	if py := res[pyID]; !py.HasContext() || py.Type != "KeyError" || py.Source.RequestID != pyRID {
		t.Errorf("python invocation: %+v, want KeyError from the invocation's stream", py)
	}
	st := f.Stats()
	if st.Found != 141 || st.Messages != 151 {
		t.Errorf("stats %+v", st)
	}
	// 150 ids: 3 batches. moto ignores the OR pattern, so each search pages
	// through all ~440 events of the group at 200 a page.
	if st.Calls < 3*2 {
		t.Errorf("%d calls: the batches were not paged through", st.Calls)
	}
	// A second finder over the same cache makes no call.
	f2 := New(env.Logs(t), Options{Groups: []string{svc, fn}, Cache: OpenCache(dir, []string{svc, fn}, "", false)})
	res2, err := f2.Lookup(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	if st2 := f2.Stats(); st2.Calls != 0 || st2.Cached != 151 || res2[uuidFor(3)].Reason != res[uuidFor(3)].Reason {
		t.Errorf("cached lookup: %+v", st2)
	}
}

// uuidFor is a message id shaped like SQS's.
func uuidFor(i int) string { return fmt.Sprintf("%08x-1d2e-4a4b-8c5d-%012x", 0x5f000000+i*7919, i) }

// BenchmarkLookup1000 measures a lookup of 1,000 dead-lettered messages in
// one log group on moto (nothing cached): messages per second and
// FilterLogEvents calls per 1,000 messages at the default batch size, for
// a consumer that logs each failed record (Powertools JSON) and for a
// Lambda function whose records are tied to the error only through the
// request id (10 records per invocation). moto ignores the OR pattern and
// returns every event of the window, so each call reads the whole group:
// per-call cost is higher than on AWS; the call count is what AWS sees.
func BenchmarkLookup1000(b *testing.B) {
	for _, style := range []string{worker.StylePowertools, worker.StyleLambda} {
		b.Run(style, func(b *testing.B) {
			env := testenv.RequireMoto(b)
			api := env.Logs(b)
			g := logGroup(b, api)
			var msgs []sqstypes.Message
			var reqs []Request
			now := time.Now()
			for i := 0; i < 1000; i++ {
				msgs = append(msgs, sqstypes.Message{MessageId: aws.String(uuidFor(i))})
				reqs = append(reqs, Request{MessageID: uuidFor(i), From: now.Add(-time.Hour), To: now.Add(time.Minute)})
			}
			sink := &worker.LogSink{API: api, Group: g, Style: style}
			for i := 0; i < len(msgs); i += 10 {
				if err := sink.Batch(b.Context(), i/10, worker.ModeDown, nil, msgs[i:i+10]); err != nil {
					b.Fatal(err)
				}
			}
			var calls, found int
			start := time.Now()
			for b.Loop() {
				f := New(api, Options{Groups: []string{g}, Rate: 1000})
				res, err := f.Lookup(b.Context(), reqs)
				if err != nil {
					b.Fatal(err)
				}
				calls += f.Stats().Calls
				found = 0
				for _, fl := range res {
					if fl.HasContext() {
						found++
					}
				}
			}
			if found != 1000 {
				b.Fatalf("found %d of the 1000 failures logged", found)
			}
			b.ReportMetric(float64(calls)/float64(b.N), "calls/1000msgs")
			b.ReportMetric(float64(1000*b.N)/time.Since(start).Seconds(), "msgs/s")
		})
	}
}
