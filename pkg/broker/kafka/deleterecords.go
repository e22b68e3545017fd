package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/dlqctl/dlqctl/pkg/broker"
)

var _ broker.RecordDeleter = (*Endpoint)(nil)

// DeleteHandled deletes, per partition, the records below dlqctl's
// committed offset (DeleteRecords, irreversible): every one of them was
// archived and verified, replayed and acknowledged, or explicitly
// discarded. It returns a line per partition whose log start moved.
func (e *Endpoint) DeleteHandled(ctx context.Context) ([]string, error) {
	adm, err := e.Admin()
	if err != nil {
		return nil, err
	}
	plan, err := e.Plan(ctx)
	if err != nil {
		return nil, err
	}
	offs := kadm.Offsets{}
	for _, pr := range plan.Partitions {
		if pr.Committed > pr.LogStart {
			offs.Add(kadm.Offset{Topic: e.Name(), Partition: pr.Partition, At: pr.Committed, LeaderEpoch: -1})
		}
	}
	if len(offs) == 0 {
		return nil, nil
	}
	resp, err := adm.DeleteRecords(ctx, offs)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("DeleteRecords on %s: %w", e.Name(), err)
	}
	var lines []string
	resp.Each(func(r kadm.DeleteRecordsResponse) {
		lines = append(lines, fmt.Sprintf("%s partition %d now starts at offset %d", r.Topic, r.Partition, r.LowWatermark))
	})
	return lines, nil
}
