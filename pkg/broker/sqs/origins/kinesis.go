package origins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kinesistypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

// kinesisBatch reads back the records a Lambda on-failure record of a
// Kinesis event source points to (shard, first and last sequence number)
// and builds the event Lambda's event source mapping invoked the function
// with. skip says why it cannot: the stream or shard is gone, or the
// batch is no longer complete in the stream (its retention passed).
func (r *Resolver) kinesisBatch(ctx context.Context, b *batchInfo) (payload []byte, skip string, err error) {
	where := fmt.Sprintf("a Kinesis batch pointer (stream %s, shard %s, sequence %s to %s)", b.StreamArn, b.ShardID, b.StartSequenceNumber, b.EndSequenceNumber)
	start, ok1 := new(big.Int).SetString(b.StartSequenceNumber, 10)
	end, ok2 := new(big.Int).SetString(b.EndSequenceNumber, 10)
	if !ok1 || !ok2 || b.StreamArn == "" || b.ShardID == "" {
		return nil, SkipCannot + ": " + where + ": not a readable pointer", nil
	}
	it, err := r.c.Kinesis.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamARN: aws.String(b.StreamArn), ShardId: aws.String(b.ShardID),
		ShardIteratorType: kinesistypes.ShardIteratorTypeAtSequenceNumber, StartingSequenceNumber: aws.String(b.StartSequenceNumber)})
	if err != nil {
		var nf *kinesistypes.ResourceNotFoundException
		var ia *kinesistypes.InvalidArgumentException
		switch {
		case errors.As(err, &nf):
			return nil, SkipCannot + ": " + where + ": the stream or shard no longer exists", nil
		case errors.As(err, &ia):
			return nil, SkipCannot + ": " + where + ": the stream no longer holds that sequence number (past its retention)", nil
		}
		return nil, "", awsErr("kinesis:GetShardIterator", b.StreamArn, err)
	}
	region := arnPart(b.StreamArn, 3)
	var records []any
	var last *big.Int
	iter := it.ShardIterator
	for iter != nil && (last == nil || last.Cmp(end) < 0) {
		out, err := r.c.Kinesis.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: iter, StreamARN: aws.String(b.StreamArn), Limit: aws.Int32(1000)})
		if err != nil {
			return nil, "", awsErr("kinesis:GetRecords", b.StreamArn, err)
		}
		for _, rec := range out.Records {
			seq, ok := new(big.Int).SetString(aws.ToString(rec.SequenceNumber), 10)
			if !ok || seq.Cmp(end) > 0 {
				last = end
				break
			}
			if len(records) == 0 && seq.Cmp(start) != 0 {
				return nil, SkipCannot + ": " + where + ": its first record is no longer in the stream (past its retention)", nil
			}
			last = seq
			arrival := 0.0
			if rec.ApproximateArrivalTimestamp != nil {
				arrival = float64(rec.ApproximateArrivalTimestamp.UnixMilli()) / 1000
			}
			records = append(records, map[string]any{
				"kinesis": map[string]any{"kinesisSchemaVersion": "1.0", "partitionKey": aws.ToString(rec.PartitionKey),
					"sequenceNumber": aws.ToString(rec.SequenceNumber), "data": rec.Data, "approximateArrivalTimestamp": arrival},
				"eventSource": "aws:kinesis", "eventVersion": "1.0", "eventID": b.ShardID + ":" + aws.ToString(rec.SequenceNumber),
				"eventName": "aws:kinesis:record", "awsRegion": region, "eventSourceARN": b.StreamArn,
			})
		}
		if len(out.Records) == 0 && aws.ToInt64(out.MillisBehindLatest) == 0 {
			break
		}
		iter = out.NextShardIterator
	}
	if len(records) == 0 || last == nil || last.Cmp(end) < 0 {
		return nil, fmt.Sprintf("%s: %s: the stream holds %d record(s) of it, not the whole batch", SkipCannot, where, len(records)), nil
	}
	if b.BatchSize > 0 && len(records) != b.BatchSize {
		return nil, fmt.Sprintf("%s: %s: the stream holds %d record(s) in that range, the batch had %d", SkipCannot, where, len(records), b.BatchSize), nil
	}
	// encoding/json writes []byte as base64, as Lambda's event does.
	payload, err = json.Marshal(map[string]any{"Records": records})
	return payload, "", err
}
