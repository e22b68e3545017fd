package report

import (
	"fmt"
	"time"

	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// WriteRecords prints sample's messages in format (records already
// redacted): whole records for -o json and ndjson, a table otherwise.
func WriteRecords(s *output.IOStreams, format output.Format, recs []record.Record) error {
	if recs == nil {
		recs = []record.Record{}
	}
	if done, err := WriteStructured(s, format, recs, recs); done {
		return err
	}
	if len(recs) == 0 {
		s.Infof("no messages")
		return nil
	}
	t := output.NewTable(s, "ID", "AGE", "RECV", "SOURCE", "EVENT", "ERROR", "BODY")
	for _, r := range recs {
		event := EventCell(&r)
		errText := ErrorCell(&r) // also "(logs: no log line mentions this message)"
		src := record.ARNName(r.System.SourceQueueARN, "sqs")
		if k := r.System.Kafka; k != nil && k.Origin != nil {
			src = k.Origin.Topic
		}
		if r.System.MessageGroupID != "" {
			src += " [" + r.System.MessageGroupID + "]"
		}
		t.Row(r.MessageID, output.Duration(time.Duration(r.AgeSeconds)*time.Second), fmt.Sprint(r.System.ReceiveCount),
			src, event, output.Truncate(errText, 48), output.Truncate(r.Body, 60))
	}
	return t.Render()
}
