// Command bareloop is the baseline of the whole-process benchmarks in
// internal/procbench.
//
//	bareloop loop -from DLQ_URL -to DEST_URL -workers W [-wait 1s] [-visibility 30s]
//
// moves every message of DLQ_URL to DEST_URL with W workers, each doing
// ReceiveMessage (10, long poll -wait) → SendMessageBatch → DeleteMessageBatch
// until its first empty receive: no journal, no lease, no marker, no
// per-entry bookkeeping beyond counting. It talks to SQS with the raw SDK
// (not pkg/broker/sqs) so that it stays the same while dlqctl changes. Endpoints,
// credentials and region come from the environment (AWS_ENDPOINT_URL_SQS …),
// as for dlqctl. It prints {"moved":N,"failed":F,"seconds":S} on stdout.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	if os.Args[1] != "loop" {
		usage()
	}
	os.Exit(loopMain(os.Args[2:]))
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: bareloop loop -from URL -to URL -workers W [-wait 1s] [-visibility 30s]")
	os.Exit(2)
}

func loopMain(args []string) int {
	fs := flag.NewFlagSet("loop", flag.ExitOnError)
	from := fs.String("from", "", "source queue URL")
	to := fs.String("to", "", "destination queue URL")
	workers := fs.Int("workers", 8, "concurrent receive→send→delete workers")
	wait := fs.Duration("wait", time.Second, "long poll wait of each receive")
	vis := fs.Duration("visibility", 30*time.Second, "visibility timeout of received messages")
	_ = fs.Parse(args)
	if *from == "" || *to == "" || *workers < 1 {
		usage()
	}
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx, config.WithHTTPClient(awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConns = 256
		t.MaxIdleConnsPerHost = 128
	})))
	if err != nil {
		fmt.Fprintln(os.Stderr, "bareloop:", err)
		return 1
	}
	api := sqs.NewFromConfig(cfg)
	start := time.Now()
	var moved, failed atomic.Int64
	var wg sync.WaitGroup
	for range *workers {
		wg.Go(func() {
			for {
				out, err := api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
					QueueUrl:              from,
					MaxNumberOfMessages:   10,
					WaitTimeSeconds:       int32(wait.Seconds()),
					VisibilityTimeout:     int32(vis.Seconds()),
					MessageAttributeNames: []string{"All"},
				})
				if err != nil {
					fmt.Fprintln(os.Stderr, "bareloop: receive:", err)
					failed.Add(1)
					return
				}
				if len(out.Messages) == 0 {
					return
				}
				send := make([]types.SendMessageBatchRequestEntry, len(out.Messages))
				for i, m := range out.Messages {
					send[i] = types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: m.Body, MessageAttributes: m.MessageAttributes}
				}
				sent, err := api.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: to, Entries: send})
				if err != nil {
					fmt.Fprintln(os.Stderr, "bareloop: send:", err)
					failed.Add(int64(len(send)))
					continue
				}
				failed.Add(int64(len(sent.Failed)))
				var del []types.DeleteMessageBatchRequestEntry
				for _, s := range sent.Successful {
					i, _ := strconv.Atoi(aws.ToString(s.Id))
					del = append(del, types.DeleteMessageBatchRequestEntry{Id: s.Id, ReceiptHandle: out.Messages[i].ReceiptHandle})
				}
				if len(del) == 0 {
					continue
				}
				d, err := api.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: from, Entries: del})
				if err != nil {
					fmt.Fprintln(os.Stderr, "bareloop: delete:", err)
					failed.Add(int64(len(del)))
					continue
				}
				moved.Add(int64(len(d.Successful)))
				failed.Add(int64(len(d.Failed)))
			}
		})
	}
	wg.Wait()
	b, _ := json.Marshal(map[string]any{"moved": moved.Load(), "failed": failed.Load(), "seconds": time.Since(start).Seconds()})
	fmt.Println(string(b))
	if failed.Load() > 0 {
		return 4
	}
	return 0
}
