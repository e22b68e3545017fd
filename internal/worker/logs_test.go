package worker

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	cwl "github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// recordingLogs keeps what PutLogEvents wrote, per stream.
type recordingLogs struct {
	groups  []string
	streams []string
	events  []string
}

func (r *recordingLogs) CreateLogGroup(_ context.Context, in *cwl.CreateLogGroupInput, _ ...func(*cwl.Options)) (*cwl.CreateLogGroupOutput, error) {
	r.groups = append(r.groups, aws.ToString(in.LogGroupName))
	return &cwl.CreateLogGroupOutput{}, nil
}

func (r *recordingLogs) CreateLogStream(_ context.Context, in *cwl.CreateLogStreamInput, _ ...func(*cwl.Options)) (*cwl.CreateLogStreamOutput, error) {
	r.streams = append(r.streams, aws.ToString(in.LogStreamName))
	return &cwl.CreateLogStreamOutput{}, nil
}

func (r *recordingLogs) PutLogEvents(_ context.Context, in *cwl.PutLogEventsInput, _ ...func(*cwl.Options)) (*cwl.PutLogEventsOutput, error) {
	last := int64(0)
	for _, e := range in.LogEvents {
		if aws.ToInt64(e.Timestamp) < last {
			panic("events out of time order")
		}
		last = aws.ToInt64(e.Timestamp)
		r.events = append(r.events, aws.ToString(e.Message))
	}
	return &cwl.PutLogEventsOutput{}, nil
}

// Each style logs every failed message so that its id leads to the error
// — on the failure line itself, or (lambda) through the request id — in
// the words the mode's failure would really produce.
func TestLogSinkStyles(t *testing.T) {
	bad := []types.Message{{MessageId: aws.String("11111111-aaaa-4bbb-8ccc-000000000001")}, {MessageId: aws.String("11111111-aaaa-4bbb-8ccc-000000000002")}}
	ok := []types.Message{{MessageId: aws.String("22222222-aaaa-4bbb-8ccc-000000000003")}}
	cases := []struct {
		style, mode, want, stream string
	}{
		{StylePowertools, ModeDown, `"exception_name":"ConnectionError"`, "[$LATEST]"},
		{StylePowertools, ModeBug, `TypeError: unsupported operand type(s)`, "[$LATEST]"},
		{StyleService, ModeDown, `level=ERROR`, "orders-consumer/"},
		{StyleService, ModeBug, `must not be null`, "orders-consumer/"},
		{StyleJava, ModeDown, "java.net.SocketTimeoutException: Read timed out", "orders-consumer/"},
		{StyleJava, ModeBug, "MismatchedInputException", "orders-consumer/"},
		{StyleLambda, ModeDown, "Task timed out after 3.00 seconds", "[$LATEST]"},
		{StyleLambda, ModeBug, "ERROR\tInvoke Error \t{\"errorType\":\"TypeError\"", "[$LATEST]"},
	}
	for _, c := range cases {
		t.Run(c.style+"/"+c.mode, func(t *testing.T) {
			api := &recordingLogs{}
			sink := &LogSink{API: api, Group: "/g", Style: c.style}
			if err := sink.Batch(context.Background(), 0, c.mode, ok, bad); err != nil {
				t.Fatal(err)
			}
			if len(api.groups) != 1 || len(api.streams) != 1 || !strings.Contains(api.streams[0], c.stream) {
				t.Fatalf("groups %v streams %v", api.groups, api.streams)
			}
			all := strings.Join(api.events, "\n")
			if !strings.Contains(all, c.want) {
				t.Errorf("no %q in:\n%s", c.want, all)
			}
			for _, m := range append(bad, ok...) {
				if !strings.Contains(all, aws.ToString(m.MessageId)) {
					t.Errorf("message %s is not logged", aws.ToString(m.MessageId))
				}
			}
			if c.style == StyleLambda {
				// The failed records' invocation and the processed record's
				// are two invocations; only the first reports an error.
				if n := strings.Count(all, "START RequestId: "); n != 2 {
					t.Errorf("%d invocations, want 2", n)
				}
				if n := strings.Count(all, "Status: "); n != 1 {
					t.Errorf("%d REPORT lines with a status, want 1 (the failed invocation)", n)
				}
			}
		})
	}
	if err := (&LogSink{API: &recordingLogs{}, Group: "/g", Style: "xml"}).Ensure(context.Background()); err == nil {
		t.Error("an unknown style was accepted")
	}
}
